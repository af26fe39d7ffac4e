import ParleyCore
import ParleyStore

/// Errors a local user can cause through the control socket, each with a message
/// that says what to do.
enum NodeError: Error, CustomStringConvertible {
    case peerNotFound(String)
    case peerAmbiguous(String, [PeerRecord])
    /// Nothing is sent to a blocked peer.
    case peerBlocked(PeerRecord)
    /// Nothing is sent to a peer held for approval.
    case peerAwaitingApproval(PeerRecord)
    /// The peer's key was replaced by a person; the new key is its current one.
    case peerReplaced(PeerRecord, by: IdentityPublicKey)
    case bodyTooLarge(Int)
    case emptyBody
    case storage(StoreError)
    /// The store could not count the messages already queued: nothing was queued (the
    /// per-peer bound cannot be checked on a count nobody could make).
    case outboxUncounted(StoreError)
    case fingerprintMismatch(expected: String, given: String)
    /// `trust.replace` with a safety number that is not the one computed with the new key.
    case safetyNumberMismatch(label: String, newFingerprint: String)
    /// A fingerprint prefix where the whole fingerprint is needed.
    case fingerprintTooShort(given: String, needed: Int)
    /// `trust.replace` named a fingerprint no known peer has.
    case newKeyNotFound(String)
    /// The request does not apply to this peer (replacing a key by itself, accepting a
    /// peer that is not held, unblocking one that is not blocked); the text says why.
    case notApplicable(String)
    case invalidAddress(String)
    case queueFull(PeerRecord, Int)
    /// Key rotation needs the state directory, and this node was started without one.
    case noStateDirectory

    var description: String {
        switch self {
        case .peerNotFound(let q):
            return "no peer named '\(q)' (use a display name or a fingerprint prefix; see `parley peers`)"
        case let .peerAmbiguous(q, c):
            return "'\(q)' matches \(c.count) peers: "
                + c.map { "\($0.label) (\(Node.fingerprint(of: $0.identity)), \($0.trust.rawValue))" }.joined(
                    separator: ", ")
                + "; names are labels a peer chooses: use a fingerprint prefix, or give one a nickname with "
                + "`parley trust nickname FINGERPRINT NAME`"
        case .peerBlocked(let p):
            return "\(p.label) (\(Node.fingerprint(of: p.identity))) is blocked: nothing is sent to it; "
                + "`parley trust unblock \(Node.fingerprint(of: p.identity))` to allow it again"
        case .peerAwaitingApproval(let p):
            let fp = Node.fingerprint(of: p.identity)
            return "\(p.label) (\(fp)) is a new key awaiting your approval: compare `parley trust show \(fp)` with "
                + "its owner, then `parley trust accept \(fp)` (or `parley trust block \(fp)`)"
        case let .peerReplaced(p, by):
            return "\(p.label)'s old key \(Node.fingerprint(of: p.identity)) was replaced by "
                + "\(Node.fingerprint(of: by)): send to the new key (`parley peers` lists it)"
        case .bodyTooLarge(let n):
            return "message body is \(n) bytes; the limit is \(WireLimits.maxBodyBytes)"
        case .emptyBody:
            return "message body is empty"
        case .storage(let e):
            return "could not store the message, nothing was accepted: \(e)"
        case .outboxUncounted(let e):
            return "could not count the messages already queued (\(e)), so nothing was queued: check the state "
                + "directory's disk space and permissions (`parley doctor`), then send again"
        case let .fingerprintMismatch(expected, given):
            return
                "fingerprint \(given) does not match the pinned key \(expected): do NOT trust this peer until you find out why"
        case let .safetyNumberMismatch(label, newFingerprint):
            return "that is not the safety number of the key \(newFingerprint): nothing was changed. Read the number "
                + "on \(label)'s new device again; if it still differs, that key is not \(label)'s: do not replace"
        case let .fingerprintTooShort(given, needed):
            return
                "'\(given)' is only part of a fingerprint: give all \(needed) characters (as `parley trust show PEER` "
                + "prints them), so that no other key can match"
        case .newKeyNotFound(let fp):
            return "no known peer has the key \(fp): the new key must have connected once (see `parley peers`), "
                + "and the whole fingerprint is needed"
        case .notApplicable(let why):
            return why
        case let .queueFull(p, n):
            return
                "\(n) messages are already queued for \(p.displayName); nothing more is accepted until some are delivered"
        case .noStateDirectory:
            return "this daemon has no state directory to write a new key to; restart parleyd with --state-dir"
        case .invalidAddress(let a):
            return "invalid address '\(a)': expected HOST:PORT or [IPV6]:PORT"
        }
    }
}
