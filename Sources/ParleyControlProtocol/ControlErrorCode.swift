/// Error codes in `JSONRPCError.code`. The first five are JSON-RPC 2.0's own; Parley's
/// live in the implementation-defined range -32000...-32099. docs/CONTROL.md lists when
/// each is returned and what `data` it carries.
public enum ControlErrorCode: Int, Sendable, CaseIterable, Codable {
    /// The line is not valid UTF-8 JSON.
    case parseError = -32700
    /// Valid JSON, but not a JSON-RPC 2.0 request object (this includes batch arrays).
    case invalidRequest = -32600
    case methodNotFound = -32601
    /// `params` is missing a field, has a field of the wrong type, or a value out of range.
    case invalidParams = -32602
    /// A bug or unexpected failure inside the daemon.
    case internalError = -32603

    /// No known peer matches the selector.
    case peerNotFound = -32001
    /// The selector matches several peers; `data` is `PeerAmbiguousData`.
    case peerAmbiguous = -32002
    /// Nothing is sent to this peer: it is blocked, held for approval, or its key was
    /// replaced by another (the message says which, and the command to run).
    case peerNotTrusted = -32003
    /// The message body exceeds the daemon's limit; `data` is `BodyTooLargeData`.
    case bodyTooLarge = -32004
    /// The daemon could not write to its store (e.g. disk full). Nothing was accepted.
    case storageFailed = -32005
    /// The operation is refused by policy (e.g. sending to a blocked peer).
    case notPermitted = -32006
    /// The line exceeded `ControlLimits.maxLineBytes`; the daemon closes the connection.
    case lineTooLong = -32007
    /// A wait ran out (`messages.send` with `wait`, `data` is `SendTimeoutData`) or a
    /// client left a line unfinished for `ControlLimits.idleLineTimeoutSeconds`.
    case timeout = -32008
    /// `trust.verify` was given a fingerprint that is not the peer's pinned key.
    case fingerprintMismatch = -32009
    /// `peers.connect` was given something that is not `host:port`.
    case invalidAddress = -32010
    /// `ControlLimits.maxClients` connections are open; the daemon closes this one.
    case tooManyClients = -32011
    /// A subscriber fell too far behind and was cut off.
    case subscriberTooSlow = -32012
    /// `messages.subscribe` `since` names an event the daemon no longer keeps (the journal
    /// is bounded); `data` is `EventsExpiredData`. Catch up with `messages.list`, then
    /// subscribe without `since` or with `data.prunedThrough`.
    case eventsExpired = -32020
    /// No known room matches the `#room` selector.
    case roomNotFound = -32021
    /// The room selector matches several rooms; `data` is `RoomAmbiguousData`.
    case roomAmbiguous = -32022
    /// No stored message has the id (or id prefix) a reply, edit, delete or reaction names.
    case messageNotFound = -32023
    /// `peers.connect` with `wait`: no session came of the dial (refused, unreachable,
    /// handshake failed, the peer's trust refused us); the message says which.
    case connectFailed = -32030
    /// No file transfer has the id (or id prefix) given, or the prefix names several.
    case transferNotFound = -32040
    /// `files.send`: the file cannot be sent (not a regular file, unreadable, too large, in
    /// the daemon's state directory); the message says which.
    case fileNotSendable = -32041
    /// The transfer is not in a state that allows this (accepting a completed one).
    case transferState = -32042
}
