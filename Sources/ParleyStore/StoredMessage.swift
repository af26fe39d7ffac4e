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

/// Whom a stored message names as its recipient or other party: a peer's identity, or a
/// room (an outgoing room message is addressed to its room). Typed so that nothing across
/// the store boundary is hex; the party table holds both (32-byte keys, 16-byte room ids).
public enum MessageParty: Hashable, Sendable {
    case peer(IdentityPublicKey)
    case room(RoomID)

    /// The bytes the `party` table stores.
    public var bytes: [UInt8] {
        switch self {
        case .peer(let key): key.bytes
        case .room(let id): id.bytes
        }
    }

    /// Hex for JSON and CLI text only.
    public var hex: String { Sodium.hex(bytes) }

    /// The peer's key; nil for a room.
    public var peerKey: IdentityPublicKey? {
        if case .peer(let key) = self { return key }
        return nil
    }

    /// A party from the bytes the `party` table stores (its length says which); nil if
    /// it is neither a key nor a room id.
    public init?(storedBytes bytes: [UInt8]) {
        if bytes.count == IdentityPublicKey.length, let key = try? IdentityPublicKey(bytes: bytes) {
            self = .peer(key)
        } else if let id = RoomID(bytes: bytes) {
            self = .room(id)
        } else {
            return nil
        }
    }
}

/// One message as it sits in the store: outbox and inbox share one table and one order.
public struct StoredMessage: Sendable, Equatable {
    public typealias Direction = MessageDirection

    /// Local insertion order; never reused. The cursor for listing history.
    public var rowID: Int64
    /// Globally unique message id chosen by the sender (16 random bytes).
    public var id: MessageID
    public var direction: Direction
    /// The sender's identity.
    public var sender: IdentityPublicKey
    /// The recipient: a peer, or the room of an outgoing room message.
    public var recipient: MessageParty
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
    /// The room a room message belongs to; nil for a direct message.
    public var room: RoomID?
    /// Id of the message this one replies to (same conversation); nil if not a reply.
    public var replyTo: MessageID?
    /// Unix ms (local) of the latest edit applied; nil if never edited.
    public var editedAt: Int64?
    /// Unix ms (local) the author deleted it for everyone; the body is then empty.
    public var deletedAt: Int64?
    /// The id of the journal event the transaction that stored or changed this message
    /// wrote with it (`MessageJournal`); nil when none was asked for, and on every message
    /// read back from the store.
    public var journalEventID: Int64?

    public init(
        rowID: Int64, id: MessageID, direction: Direction, sender: IdentityPublicKey, recipient: MessageParty,
        sequence: Int64, createdAt: Int64, body: String, state: MessageState,
        deliveredAt: Int64? = nil, receivedAt: Int64? = nil, readAt: Int64? = nil, room: RoomID? = nil,
        replyTo: MessageID? = nil, editedAt: Int64? = nil, deletedAt: Int64? = nil
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
    public var peer: MessageParty {
        direction == .outgoing ? recipient : .peer(sender)
    }

    /// The conversation it belongs to: its room, else the other party.
    public var conversation: MessageParty {
        room.map { .room($0) } ?? peer
    }
}

/// A message this node wants to send; the store assigns its sequence number.
public struct NewOutgoingMessage: Sendable {
    public var id: MessageID
    public var recipient: IdentityPublicKey
    public var body: String
    public var createdAt: Int64
    /// Id of the message this one replies to.
    public var replyTo: MessageID?

    public init(id: MessageID, recipient: IdentityPublicKey, body: String, createdAt: Int64, replyTo: MessageID? = nil)
    {
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
    public var id: MessageID
    public var sender: IdentityPublicKey
    public var recipient: IdentityPublicKey
    public var sequence: Int64
    public var createdAt: Int64
    public var body: String
    public var replyTo: MessageID?

    public init(
        id: MessageID, sender: IdentityPublicKey, recipient: IdentityPublicKey, sequence: Int64, createdAt: Int64,
        body: String, replyTo: MessageID? = nil
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
