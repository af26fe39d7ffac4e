/// Which way a message went, seen from this node.
public enum MessageDirection: String, Codable, Sendable, Hashable, CaseIterable {
    case incoming = "in"
    case outgoing = "out"
}

/// Where a message is: outgoing ones are `queued` until the peer acknowledges them, then
/// `delivered`; incoming ones are `received`.
public enum MessageState: String, Codable, Sendable, Hashable, CaseIterable {
    case queued, delivered, received
}

/// A message as stored by the daemon. Optional fields are always present, `null` when empty.
public struct MessageInfo: Codable, Sendable, Hashable {
    /// Message id, unique per sender; opaque to clients.
    public var id: String
    /// Sender's fingerprint (this node's own for outgoing messages).
    public var from: String
    public var fromName: String
    /// Recipient's fingerprint.
    public var to: String
    public var toName: String
    public var direction: MessageDirection
    /// Sender's per-conversation sequence number.
    public var sequence: Int
    /// Unix time in milliseconds at which the sender created the message.
    public var createdAt: Int
    public var body: String
    public var state: MessageState
    /// Unix time in milliseconds of the peer's acknowledgement (outgoing, delivered only).
    public var deliveredAt: Int?
    /// Position in this node's message log; the `after`/`before` of `messages.list`.
    public var cursor: Int
    /// Unix time in milliseconds the message was read: incoming, by this node's user
    /// (`messages.mark_read`); outgoing, by the recipient (its read receipt). Nil if unread.
    public var readAt: Int?
    /// The room of a room message (then `to` is the room id and `toName` is `#name`); null
    /// for a direct message.
    public var room: MessageRoom?

    public init(
        id: String, from: String, fromName: String, to: String, toName: String,
        direction: MessageDirection, sequence: Int, createdAt: Int, body: String,
        state: MessageState, deliveredAt: Int?, cursor: Int, readAt: Int? = nil, room: MessageRoom? = nil
    ) {
        self.id = id
        self.from = from
        self.fromName = fromName
        self.to = to
        self.toName = toName
        self.direction = direction
        self.sequence = sequence
        self.createdAt = createdAt
        self.body = body
        self.state = state
        self.deliveredAt = deliveredAt
        self.cursor = cursor
        self.readAt = readAt
        self.room = room
    }

    enum CodingKeys: String, CodingKey {
        case id, from, fromName, to, toName, direction, sequence, createdAt, body, state
        case deliveredAt, cursor, readAt, room
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(from, forKey: .from)
        try c.encode(fromName, forKey: .fromName)
        try c.encode(to, forKey: .to)
        try c.encode(toName, forKey: .toName)
        try c.encode(direction, forKey: .direction)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(body, forKey: .body)
        try c.encode(state, forKey: .state)
        try c.encode(deliveredAt, forKey: .deliveredAt)  // null, not absent, when nil
        try c.encode(cursor, forKey: .cursor)
        try c.encode(readAt, forKey: .readAt)  // null, not absent, when nil
        try c.encode(room, forKey: .room)  // null, not absent, when nil
    }
}

/// By hand: a `MessageInfo` is in every message event and every `messages.send` answer.
/// Keys in sorted order; nil optionals as `null` (see `encode(to:)`).
extension MessageInfo: CanonicalJSONWritable {
    public func writeCanonicalJSON(into out: inout [UInt8]) {
        var o = CanonicalObjectWriter(into: &out)
        o.string("body", body, &out)
        o.int("createdAt", createdAt, &out)
        o.int("cursor", cursor, &out)
        o.int("deliveredAt", deliveredAt, &out)
        o.string("direction", direction.rawValue, &out)
        o.string("from", from, &out)
        o.string("fromName", fromName, &out)
        o.string("id", id, &out)
        o.int("readAt", readAt, &out)
        if let room { o.value("room", room, &out) } else { o.null("room", &out) }
        o.int("sequence", sequence, &out)
        o.string("state", state.rawValue, &out)
        o.string("to", to, &out)
        o.string("toName", toName, &out)
        o.end(&out)
    }
}

