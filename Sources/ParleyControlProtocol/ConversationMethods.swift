/// `messages.reply`, `messages.edit`, `messages.delete`, `messages.react` and
/// `node.set_status`: the conversation features (docs/CONTROL.md).

extension ControlLimits {
    /// Characters of a quoted message a reply shows (`MessageQuote.excerpt`): one line.
    public static let maxQuoteExcerptCharacters = 80
    /// Longest reaction a request may carry: the wire limit (`WireLimits.maxReactionBytes`),
    /// checked here too so a client learns it before the daemon's finer character checks.
    public static let maxReactionBytes = 48
    /// Longest status line: the wire limit (`WireLimits.maxStatusBytes`).
    public static let maxStatusBytes = 140
}

extension ControlMethod {
    public static let messagesReply = "messages.reply"
    public static let messagesEdit = "messages.edit"
    public static let messagesDelete = "messages.delete"
    public static let messagesReact = "messages.react"
    public static let nodeSetStatus = "node.set_status"
}

extension ControlEvent {
    /// A message changed: edited, deleted for everyone, or its reactions changed.
    public static let messageUpdated = "message.updated"
    /// A peer's status line changed (or was announced at the start of a session).
    public static let peerStatus = "peer.status"
}

enum MessageSelectorCheck {
    /// A message is named by its id or an id prefix of at least 8 hex digits.
    static func check(_ value: String, field: String) throws(JSONRPCError) {
        guard (8...32).contains(value.count), value.allSatisfy(\.isHexDigit) else {
            throw .invalidParams("\"\(field)\" must be a message id or a prefix of it of at least 8 hex digits")
        }
    }
}

/// Sends a message that replies to (quotes) `message`, to the other party of that
/// message's direct conversation.
public struct MessagesReplyParams: ControlCallParams {
    public typealias ResultType = MessagesSendResult
    public static let method = ControlMethod.messagesReply
    public static let fieldNames = ["message", "body"]

    /// The message replied to: its id or an unambiguous prefix (at least 8 hex digits).
    public var message: String
    public var body: String

    public init(message: String, body: String) {
        self.message = message
        self.body = body
    }

    public func validate() throws(JSONRPCError) {
        try MessageSelectorCheck.check(message, field: "message")
        guard !body.isEmpty else { throw .invalidParams("\"body\" must not be empty") }
    }
}

/// Replaces the text of one of this node's own messages, here and at the recipient.
public struct MessagesEditParams: ControlCallParams {
    public typealias ResultType = MessageChangeResult
    public static let method = ControlMethod.messagesEdit
    public static let fieldNames = ["message", "body"]

    public var message: String
    public var body: String

    public init(message: String, body: String) {
        self.message = message
        self.body = body
    }

    public func validate() throws(JSONRPCError) {
        try MessageSelectorCheck.check(message, field: "message")
        guard !body.isEmpty else { throw .invalidParams("\"body\" must not be empty (delete the message instead)") }
    }
}

/// Deletes one of this node's own messages for everyone: its text is erased here and,
/// once the tombstone arrives, at the recipient.
public struct MessagesDeleteParams: ControlCallParams {
    public typealias ResultType = MessageChangeResult
    public static let method = ControlMethod.messagesDelete
    public static let fieldNames = ["message"]

    public var message: String

    public init(message: String) { self.message = message }

    public func validate() throws(JSONRPCError) { try MessageSelectorCheck.check(message, field: "message") }
}

/// Adds (or with `remove`, withdraws) this node's reaction to a message of a direct
/// conversation.
public struct MessagesReactParams: ControlCallParams {
    public typealias ResultType = MessageChangeResult
    public static let method = ControlMethod.messagesReact
    public static let fieldNames = ["message", "reaction", "remove"]

    public var message: String
    /// One emoji or a short word (at most 48 bytes, 8 characters).
    public var reaction: String
    public var remove: Bool?

    public init(message: String, reaction: String, remove: Bool? = nil) {
        self.message = message
        self.reaction = reaction
        self.remove = remove
    }

    public func validate() throws(JSONRPCError) {
        try MessageSelectorCheck.check(message, field: "message")
        guard !reaction.isEmpty, reaction.utf8.count <= ControlLimits.maxReactionBytes else {
            throw .invalidParams(
                "\"reaction\" must be 1 to \(ControlLimits.maxReactionBytes) bytes: one emoji or a short word")
        }
    }
}

/// The message as it is after an edit, delete or reaction.
public struct MessageChangeResult: Codable, Sendable, Hashable {
    public var message: MessageInfo
    public init(message: MessageInfo) { self.message = message }
}

/// Sets this node's status line, shown to peers next to its name ("" clears it).
public struct NodeSetStatusParams: ControlCallParams {
    public typealias ResultType = NodeSetStatusResult
    public static let method = ControlMethod.nodeSetStatus
    public static let fieldNames = ["status"]

    public var status: String

    public init(status: String) { self.status = status }

    public func validate() throws(JSONRPCError) {
        guard status.utf8.count <= ControlLimits.maxStatusBytes else {
            throw .invalidParams(
                "\"status\" is \(status.utf8.count) bytes; the limit is \(ControlLimits.maxStatusBytes)")
        }
    }
}

public struct NodeSetStatusResult: Codable, Sendable, Hashable {
    public var status: String
    /// Peers told now (those with a session that understands status lines).
    public var peersNotified: Int
    public init(status: String, peersNotified: Int) {
        self.status = status
        self.peersNotified = peersNotified
    }
}

/// `message.updated`: the message as it is now.
public struct MessageUpdatedEvent: ControlEventParams {
    public static let method = ControlEvent.messageUpdated
    public var message: MessageInfo
    public init(message: MessageInfo) { self.message = message }
}

/// `peer.status`: a peer's status line ("" when it cleared it).
public struct PeerStatusEvent: ControlEventParams {
    public static let method = ControlEvent.peerStatus
    /// The peer's fingerprint and name as shown.
    public var fingerprint: String
    public var name: String
    public var status: String
    public init(fingerprint: String, name: String, status: String) {
        self.fingerprint = fingerprint
        self.name = name
        self.status = status
    }
}
