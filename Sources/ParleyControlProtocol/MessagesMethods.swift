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

    public init(message: MessageInfo) { self.message = message }
}

/// Reads the message log, oldest first within a page. See docs/CONTROL.md for paging.
public struct MessagesListParams: ControlCallParams {
    public typealias ResultType = MessagesListResult
    public static let method = ControlMethod.messagesList
    public static let fieldNames = ["peer", "after", "before", "limit"]

    /// Only messages to or from this peer.
    public var peer: String?
    /// Only messages with `cursor > after`; the page is the oldest such messages.
    public var after: Int?
    /// Only messages with `cursor < before`; without `after` the page is the newest such.
    public var before: Int?
    public var limit: Int?

    public init(peer: String? = nil, after: Int? = nil, before: Int? = nil, limit: Int? = nil) {
        self.peer = peer
        self.after = after
        self.before = before
        self.limit = limit
    }

    public var effectiveLimit: Int { limit ?? ControlLimits.defaultListLimit }

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
    /// Where the next page starts, nil if there is none: pass it as `after` when the request
    /// had `after`, otherwise as `before`.
    public var nextCursor: Int?

    public init(messages: [MessageInfo], nextCursor: Int?) {
        self.messages = messages
        self.nextCursor = nextCursor
    }

    enum CodingKeys: String, CodingKey { case messages, nextCursor }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(messages, forKey: .messages)
        try c.encode(nextCursor, forKey: .nextCursor)  // null, not absent, when nil
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
