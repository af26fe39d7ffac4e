/// `messages.send`, `messages.list` and `messages.subscribe`.

/// Queues a message for a peer. Accepted means durably stored: the daemon answers only
/// after the message is in its outbox (or `storageFailed`: nothing was accepted).
public struct MessagesSendParams: ControlCallParams {
    public typealias ResultType = MessagesSendResult
    public static let method = ControlMethod.messagesSend
    public static let fieldNames = ["to", "body", "wait", "timeoutMs"]

    /// A display name or a fingerprint prefix (>= 4 characters, separators ignored).
    public var to: String
    public var body: String
    /// Answer only once the peer acknowledged delivery (default false).
    public var wait: Bool?
    /// With `wait`: give up after this many ms with `timeout` (the message stays queued).
    public var timeoutMs: Int?

    public init(to: String, body: String, wait: Bool? = nil, timeoutMs: Int? = nil) {
        self.to = to
        self.body = body
        self.wait = wait
        self.timeoutMs = timeoutMs
    }

    public var effectiveWait: Bool { wait ?? false }
    public var effectiveTimeoutMs: Int { timeoutMs ?? ControlLimits.defaultSendWaitMilliseconds }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(to, field: "to")
        guard !body.isEmpty else { throw .invalidParams("\"body\" must not be empty") }
        if let timeoutMs, !(1...ControlLimits.maxSendWaitMilliseconds).contains(timeoutMs) {
            throw .invalidParams("\"timeoutMs\" must be between 1 and \(ControlLimits.maxSendWaitMilliseconds)")
        }
    }
}

public struct MessagesSendResult: Codable, Sendable, Hashable {
    public var message: MessageInfo
    /// Whether a session with the recipient was up when the message was stored: then it
    /// is already on its way (sent, not yet acknowledged), otherwise it waits in the outbox
    /// because the peer is offline. Absent for room messages.
    public var peerOnline: Bool?
    /// Room messages only: how many other joined members the message goes to, and how many
    /// of them had a session up when it was stored (those have it on its way already).
    public var roomRecipients: Int?
    public var roomRecipientsOnline: Int?

    public init(
        message: MessageInfo, peerOnline: Bool? = nil, roomRecipients: Int? = nil, roomRecipientsOnline: Int? = nil
    ) {
        self.message = message
        self.peerOnline = peerOnline
        self.roomRecipients = roomRecipients
        self.roomRecipientsOnline = roomRecipientsOnline
    }
}

/// Reads the message log: by default the NEWEST page (what a person opening a conversation
/// wants to see), ascending within the page. See docs/CONTROL.md for paging.
public struct MessagesListParams: ControlCallParams {
    public typealias ResultType = MessagesListResult
    public static let method = ControlMethod.messagesList
    public static let fieldNames = ["peer", "after", "before", "limit"]

    /// Only messages to or from this peer (or in `#room`).
    public var peer: String?
    /// Only messages with `cursor > after`; without `before` the page is the OLDEST such
    /// messages (paging forward, towards the newest).
    public var after: Int?
    /// Only messages with `cursor < before`; the page is the NEWEST such messages (paging
    /// back, towards the oldest). With neither, the page is the newest of the whole log.
    public var before: Int?
    public var limit: Int?

    public init(peer: String? = nil, after: Int? = nil, before: Int? = nil, limit: Int? = nil) {
        self.peer = peer
        self.after = after
        self.before = before
        self.limit = limit
    }

    public var effectiveLimit: Int { limit ?? ControlLimits.defaultListLimit }

    /// The request pages forward (towards newer messages): `after` without `before`.
    public var pagesForward: Bool { after != nil && before == nil }

    public func validate() throws(JSONRPCError) {
        if let peer { try ParamCheck.peerSelector(peer, field: "peer") }
        try ParamCheck.nonNegative(after, field: "after")
        try ParamCheck.nonNegative(before, field: "before")
        if let limit, !(1...ControlLimits.maxListLimit).contains(limit) {
            throw .invalidParams("\"limit\" must be between 1 and \(ControlLimits.maxListLimit)")
        }
    }
}

public struct MessagesListResult: Codable, Sendable, Hashable {
    /// Ascending by cursor.
    public var messages: [MessageInfo]
    /// The next page in the direction the request paged, nil if there is none: pass it as
    /// `after` when the request paged forward (`after` without `before`), otherwise as
    /// `before` (it is then `olderCursor`).
    public var nextCursor: Int?
    /// Pass as `before` for the page of older messages; nil when nothing older exists.
    public var olderCursor: Int?
    /// Pass as `after` for the page of newer messages; nil when nothing newer exists.
    public var newerCursor: Int?
    /// The cursors of stored messages in this page's range that could not be read (a
    /// damaged store): left out of `messages`, the rest of the page is there. Absent when
    /// none.
    public var unreadable: [Int] = []

    public init(messages: [MessageInfo], nextCursor: Int?, olderCursor: Int? = nil, newerCursor: Int? = nil) {
        self.messages = messages
        self.nextCursor = nextCursor
        self.olderCursor = olderCursor
        self.newerCursor = newerCursor
    }

    /// The page's cursors from what the store found beyond it: the older page ends just
    /// before the first message shown, the newer one starts just after the last.
    public init(
        messages: [MessageInfo], hasOlder: Bool, hasNewer: Bool, pagedForward: Bool,
        requestedAfter: Int? = nil, requestedBefore: Int? = nil, unreadable: [Int] = []
    ) {
        // The page's range includes its unreadable rows: the next page starts beyond them.
        let range = messages.map(\.cursor) + unreadable
        let older = hasOlder ? (range.min() ?? requestedAfter.map { $0 + 1 }) : nil
        let newer = hasNewer ? (range.max() ?? requestedBefore.map { $0 - 1 }) : nil
        self.init(messages: messages, nextCursor: pagedForward ? newer : older, olderCursor: older, newerCursor: newer)
        self.unreadable = unreadable
    }

    enum CodingKeys: String, CodingKey { case messages, nextCursor, olderCursor, newerCursor, unreadable }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        messages = try c.decode([MessageInfo].self, forKey: .messages)
        nextCursor = try c.decodeIfPresent(Int.self, forKey: .nextCursor)
        olderCursor = try c.decodeIfPresent(Int.self, forKey: .olderCursor)
        newerCursor = try c.decodeIfPresent(Int.self, forKey: .newerCursor)
        unreadable = try c.decodeIfPresent([Int].self, forKey: .unreadable) ?? []
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(messages, forKey: .messages)
        // null, not absent, when nil
        try c.encode(nextCursor, forKey: .nextCursor)
        try c.encode(olderCursor, forKey: .olderCursor)
        try c.encode(newerCursor, forKey: .newerCursor)
        if !unreadable.isEmpty { try c.encode(unreadable, forKey: .unreadable) }
    }
}

/// Turns this connection into a subscriber: events follow as notifications (ControlEvents.swift).
public struct MessagesSubscribeParams: ControlCallParams {
    public typealias ResultType = MessagesSubscribeResult
    public static let method = ControlMethod.messagesSubscribe
    public static let fieldNames = ["peer", "since"]

    /// Only events concerning this peer.
    public var peer: String?
    /// Resume: first replay every stored event with an `eventId` greater than this (the
    /// last one the client saw), in order, then continue live.
    public var since: Int?

    public init(peer: String? = nil, since: Int? = nil) {
        self.peer = peer
        self.since = since
    }

    public func validate() throws(JSONRPCError) {
        if let peer { try ParamCheck.peerSelector(peer, field: "peer") }
        try ParamCheck.nonNegative(since, field: "since")
    }
}

public struct MessagesSubscribeResult: Codable, Sendable, Hashable {
    public var subscribed: Bool
    /// The newest event id when the subscription started (0: none yet). Live events have
    /// larger ids; with `since`, the replayed ones are those up to this id.
    public var lastEventId: Int?

    public init(subscribed: Bool, lastEventId: Int? = nil) {
        self.subscribed = subscribed
        self.lastEventId = lastEventId
    }
}

/// Marks incoming messages from a peer as read (and, unless read receipts are off, tells
/// the sender).
public struct MessagesMarkReadParams: ControlCallParams {
    public typealias ResultType = MessagesMarkReadResult
    public static let method = ControlMethod.messagesMarkRead
    public static let fieldNames = ["peer", "upTo"]

    public var peer: String
    /// Only messages with `cursor <= upTo`; absent: every message from the peer.
    public var upTo: Int?

    public init(peer: String, upTo: Int? = nil) {
        self.peer = peer
        self.upTo = upTo
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(peer, field: "peer")
        try ParamCheck.nonNegative(upTo, field: "upTo")
    }
}

public struct MessagesMarkReadResult: Codable, Sendable, Hashable {
    /// Messages that were unread and are now read.
    public var marked: Int
    /// Messages from the peer still unread (newer than `upTo`).
    public var unread: Int

    public init(marked: Int, unread: Int) {
        self.marked = marked
        self.unread = unread
    }
}
