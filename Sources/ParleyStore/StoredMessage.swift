import ParleyCore

/// Which way a stored message travelled, seen from this node.
public enum MessageDirection: String, Codable, Sendable {
    case outgoing, incoming
}

/// Where a stored message is in its life. Outgoing messages go queued -> delivered;
/// incoming messages are born received.
public enum MessageState: String, Codable, Sendable {
    case queued, delivered, received
}

/// One message as it sits in the store: outbox and inbox share one table and one order.
public struct StoredMessage: Sendable, Equatable, Codable {
    public typealias Direction = MessageDirection

    /// Local insertion order; never reused. The cursor for listing history.
    public var rowID: Int64
    /// Globally unique message id chosen by the sender: 32 lowercase hex chars (16 random bytes).
    public var id: String
    public var direction: Direction
    /// Identity hex of the sender.
    public var sender: String
    /// Identity hex of the recipient.
    public var recipient: String
    /// The sender's per-node sequence number.
    public var sequence: Int64
    /// Unix ms on the sender's clock.
    public var createdAt: Int64
    public var body: String
    public var state: MessageState
    /// Unix ms when the recipient's acknowledgement arrived (outgoing only).
    public var deliveredAt: Int64?
    /// Unix ms when this node stored the message (incoming only).
    public var receivedAt: Int64?
    /// Unix ms when the message was read: incoming, by this node's user; outgoing, by the
    /// recipient (its read receipt arrived). Nil while unread.
    public var readAt: Int64?
    /// The room (id hex) a room message belongs to; nil for a direct message.
    public var room: String?
    /// Id of the message this one replies to (same conversation); nil if not a reply.
    public var replyTo: String?
    /// Unix ms (local) of the latest edit applied; nil if never edited.
    public var editedAt: Int64?
    /// Unix ms (local) the author deleted it for everyone; the body is then empty.
    public var deletedAt: Int64?
    /// The id of the journal event the transaction that stored or changed this message
    /// wrote with it (`MessageJournal`); nil when none was asked for, and on every message
    /// read back from the store.
    public var journalEventID: Int64?

    public init(
        rowID: Int64, id: String, direction: Direction, sender: String, recipient: String,
        sequence: Int64, createdAt: Int64, body: String, state: MessageState,
        deliveredAt: Int64? = nil, receivedAt: Int64? = nil, readAt: Int64? = nil, room: String? = nil,
        replyTo: String? = nil, editedAt: Int64? = nil, deletedAt: Int64? = nil
    ) {
        self.rowID = rowID
        self.id = id
        self.direction = direction
        self.sender = sender
        self.recipient = recipient
        self.sequence = sequence
        self.createdAt = createdAt
        self.body = body
        self.state = state
        self.deliveredAt = deliveredAt
        self.receivedAt = receivedAt
        self.readAt = readAt
        self.room = room
        self.replyTo = replyTo
        self.editedAt = editedAt
        self.deletedAt = deletedAt
    }

    /// The other party: the recipient of an outgoing message, the sender of an incoming one.
    public var peer: String {
        direction == .outgoing ? recipient : sender
    }
}

/// A message this node wants to send; the store assigns its sequence number.
public struct NewOutgoingMessage: Sendable {
    public var id: String
    public var recipient: String
    public var body: String
    public var createdAt: Int64
    /// Id of the message this one replies to.
    public var replyTo: String?

    public init(id: String, recipient: String, body: String, createdAt: Int64, replyTo: String? = nil) {
        self.id = id
        self.recipient = recipient
        self.body = body
        self.createdAt = createdAt
        self.replyTo = replyTo
    }
}

/// A message that arrived from a peer, already authenticated and decoded by the caller.
/// A chat from one peer as its session decoded it, with typed id and keys: nothing for
/// the store to check again (`Store.storeIncoming(_:from:to:at:journal:)`).
public struct ReceivedChat: Sendable {
    public var id: MessageID
    public var sequence: Int64
    public var createdAt: Int64
    public var body: String
    public var replyTo: MessageID?

    public init(id: MessageID, sequence: Int64, createdAt: Int64, body: String, replyTo: MessageID? = nil) {
        self.id = id
        self.sequence = sequence
        self.createdAt = createdAt
        self.body = body
        self.replyTo = replyTo
    }
}

public struct IncomingMessage: Sendable {
    public var id: String
    public var sender: String
    public var recipient: String
    public var sequence: Int64
    public var createdAt: Int64
    public var body: String
    public var replyTo: String?

    public init(
        id: String, sender: String, recipient: String, sequence: Int64, createdAt: Int64, body: String,
        replyTo: String? = nil
    ) {
        self.id = id
        self.sender = sender
        self.recipient = recipient
        self.sequence = sequence
        self.createdAt = createdAt
        self.body = body
        self.replyTo = replyTo
    }
}
