/// Which way a message went, seen from this node.
public enum MessageDirection: String, Codable, Sendable, Hashable, CaseIterable {
    case incoming = "in"
    case outgoing = "out"
}

/// Where a message is: outgoing ones are `queued` until the peer acknowledges them, then
/// `delivered`; incoming ones are `received`. An outgoing room message is `queued` while no
/// member is known to hold it, `partial` while some do and others not yet (who:
/// `MessageInfo.roomDelivery`), `delivered` once every member it was sent to holds it.
public enum MessageState: String, Codable, Sendable, Hashable, CaseIterable {
    case queued, partial, delivered, received
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
    /// The message this one replies to; null if it is not a reply.
    public var replyTo: MessageQuote?
    /// Unix time in milliseconds (this node's clock) of the latest edit; null if never edited.
    public var editedAt: Int?
    /// Unix time in milliseconds (this node's clock) the author deleted the message for
    /// everyone; `body` is then "". Null while it exists.
    public var deletedAt: Int?
    /// Reactions on the message now, one entry per reaction text (empty: none).
    public var reactions: [MessageReaction]
    /// An outgoing room message: which members hold it, as far as this node knows; null
    /// for every other message.
    public var roomDelivery: RoomDelivery?

    /// Inlinable: built for every message line in the daemon, another module, where an
    /// opaque call took each field as an argument and copied it into place (~900
    /// instructions a message, issue 32 part 11).
    @inlinable
    public init(
        id: String, from: String, fromName: String, to: String, toName: String,
        direction: MessageDirection, sequence: Int, createdAt: Int, body: String,
        state: MessageState, deliveredAt: Int?, cursor: Int, readAt: Int? = nil, room: MessageRoom? = nil,
        replyTo: MessageQuote? = nil, editedAt: Int? = nil, deletedAt: Int? = nil, reactions: [MessageReaction] = [],
        roomDelivery: RoomDelivery? = nil
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
        self.replyTo = replyTo
        self.editedAt = editedAt
        self.deletedAt = deletedAt
        self.reactions = reactions
        self.roomDelivery = roomDelivery
    }

    enum CodingKeys: String, CodingKey {
        case id, from, fromName, to, toName, direction, sequence, createdAt, body, state
        case deliveredAt, cursor, readAt, room, replyTo, editedAt, deletedAt, reactions, roomDelivery
    }

    /// The conversation fields may be absent (a daemon older than them): read as none.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        from = try c.decode(String.self, forKey: .from)
        fromName = try c.decode(String.self, forKey: .fromName)
        to = try c.decode(String.self, forKey: .to)
        toName = try c.decode(String.self, forKey: .toName)
        direction = try c.decode(MessageDirection.self, forKey: .direction)
        sequence = try c.decode(Int.self, forKey: .sequence)
        createdAt = try c.decode(Int.self, forKey: .createdAt)
        body = try c.decode(String.self, forKey: .body)
        state = try c.decode(MessageState.self, forKey: .state)
        deliveredAt = try c.decodeIfPresent(Int.self, forKey: .deliveredAt)
        cursor = try c.decode(Int.self, forKey: .cursor)
        readAt = try c.decodeIfPresent(Int.self, forKey: .readAt)
        room = try c.decodeIfPresent(MessageRoom.self, forKey: .room)
        replyTo = try c.decodeIfPresent(MessageQuote.self, forKey: .replyTo)
        editedAt = try c.decodeIfPresent(Int.self, forKey: .editedAt)
        deletedAt = try c.decodeIfPresent(Int.self, forKey: .deletedAt)
        reactions = try c.decodeIfPresent([MessageReaction].self, forKey: .reactions) ?? []
        roomDelivery = try c.decodeIfPresent(RoomDelivery.self, forKey: .roomDelivery)
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
        try c.encode(replyTo, forKey: .replyTo)
        try c.encode(editedAt, forKey: .editedAt)
        try c.encode(deletedAt, forKey: .deletedAt)
        try c.encode(reactions, forKey: .reactions)
        try c.encode(roomDelivery, forKey: .roomDelivery)
    }
}

/// By hand: a `MessageInfo` is in every message event and every `messages.send` answer.
/// Keys in sorted order; nil optionals as `null` (see `encode(to:)`). Written in place in
/// the output buffer (`CanonicalRawWriter`).
extension MessageInfo: CanonicalJSONWritable, CanonicalJSONRawWritable {
    public func writeCanonicalJSON(into out: inout [UInt8]) {
        CanonicalRawWriter.append(self, to: &out)
    }

    /// Keys with their quotes, colons and commas, the braces, `direction` and `state`:
    /// 222 bytes, rounded up.
    private static let fixedJSONLength = 256

    var canonicalJSONMaxLength: Int {
        typealias W = CanonicalRawWriter
        return Self.fixedJSONLength + W.maxLength(body) + W.maxLength(from) + W.maxLength(fromName)
            + W.maxLength(id) + W.maxLength(to) + W.maxLength(toName) + 7 * W.maxIntLength
            + W.maxLength(reactions) + W.maxLength(replyTo) + W.maxLength(room) + W.maxLength(roomDelivery)
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"body\":")
        w.string(body)
        w.raw(",\"createdAt\":")
        w.int(createdAt)
        w.raw(",\"cursor\":")
        w.int(cursor)
        w.raw(",\"deletedAt\":")
        w.int(deletedAt)
        w.raw(",\"deliveredAt\":")
        w.int(deliveredAt)
        w.raw(",\"direction\":")
        w.raw(direction.canonicalJSON)
        w.raw(",\"editedAt\":")
        w.int(editedAt)
        w.raw(",\"from\":")
        w.string(from)
        w.raw(",\"fromName\":")
        w.string(fromName)
        w.raw(",\"id\":")
        w.string(id)
        w.raw(",\"reactions\":")
        w.array(reactions)
        w.raw(",\"readAt\":")
        w.int(readAt)
        w.raw(",\"replyTo\":")
        w.value(replyTo)
        w.raw(",\"room\":")
        w.value(room)
        w.raw(",\"roomDelivery\":")
        w.value(roomDelivery)
        w.raw(",\"sequence\":")
        w.int(sequence)
        w.raw(",\"state\":")
        w.raw(state.canonicalJSON)
        w.raw(",\"to\":")
        w.string(to)
        w.raw(",\"toName\":")
        w.string(toName)
        w.raw("}")
    }
}

extension MessageDirection {
    /// The raw value as a JSON string.
    var canonicalJSON: StaticString {
        switch self {
        case .incoming: "\"in\""
        case .outgoing: "\"out\""
        }
    }
}

extension MessageState {
    /// The raw value as a JSON string.
    var canonicalJSON: StaticString {
        switch self {
        case .queued: "\"queued\""
        case .partial: "\"partial\""
        case .delivered: "\"delivered\""
        case .received: "\"received\""
        }
    }
}

/// What a reply shows of the message it answers.
public struct MessageQuote: Codable, Sendable, Hashable, CanonicalJSONWritable, CanonicalJSONRawWritable {
    /// The quoted message's id.
    public var id: String
    /// Its author's name as this node shows it; null if this node does not have the message.
    public var fromName: String?
    /// The start of its text (at most `ControlLimits.maxQuoteExcerptCharacters`), "" if it
    /// was deleted, null if this node does not have it.
    public var excerpt: String?
    /// Whether the quoted message was deleted for everyone.
    public var deleted: Bool

    public init(id: String, fromName: String?, excerpt: String?, deleted: Bool) {
        self.id = id
        self.fromName = fromName
        self.excerpt = excerpt
        self.deleted = deleted
    }

    enum CodingKeys: String, CodingKey { case id, fromName, excerpt, deleted }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(fromName, forKey: .fromName)
        try c.encode(excerpt, forKey: .excerpt)
        try c.encode(deleted, forKey: .deleted)
    }

    public func writeCanonicalJSON(into out: inout [UInt8]) {
        CanonicalRawWriter.append(self, to: &out)
    }

    /// Keys with their punctuation, the braces and `deleted`'s value: 46 bytes, rounded up.
    var canonicalJSONMaxLength: Int {
        64 + CanonicalRawWriter.maxLength(excerpt) + CanonicalRawWriter.maxLength(fromName)
            + CanonicalRawWriter.maxLength(id)
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"deleted\":")
        w.bool(deleted)
        w.raw(",\"excerpt\":")
        w.string(excerpt)
        w.raw(",\"fromName\":")
        w.string(fromName)
        w.raw(",\"id\":")
        w.string(id)
        w.raw("}")
    }
}

/// Who holds an outgoing room message (issue 30): the members it was sent to that
/// acknowledged it to this node or listed it in their room summary (so a member that got it
/// from another member counts, once this node hears from it).
public struct RoomDelivery: Codable, Sendable, Hashable, CanonicalJSONWritable, CanonicalJSONRawWritable {
    /// How many members it was sent to (the room's other joined members when it was written).
    public var members: Int
    /// The members known to hold it, in the order this node learned it.
    public var heldBy: [MessageHolder]

    public init(members: Int, heldBy: [MessageHolder]) {
        self.members = members
        self.heldBy = heldBy
    }

    public func writeCanonicalJSON(into out: inout [UInt8]) {
        CanonicalRawWriter.append(self, to: &out)
    }

    /// Keys with their punctuation and the braces: 22 bytes, rounded up.
    var canonicalJSONMaxLength: Int {
        32 + CanonicalRawWriter.maxLength(heldBy) + CanonicalRawWriter.maxIntLength
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"heldBy\":")
        w.array(heldBy)
        w.raw(",\"members\":")
        w.int(members)
        w.raw("}")
    }
}

/// A member that holds a room message.
public struct MessageHolder: Codable, Sendable, Hashable, CanonicalJSONWritable, CanonicalJSONRawWritable {
    public var fingerprint: String
    /// Its name as this node shows it.
    public var name: String
    /// Unix time in milliseconds (this node's clock) this node learned it.
    public var at: Int

    public init(fingerprint: String, name: String, at: Int) {
        self.fingerprint = fingerprint
        self.name = name
        self.at = at
    }

    public func writeCanonicalJSON(into out: inout [UInt8]) {
        CanonicalRawWriter.append(self, to: &out)
    }

    /// Keys with their punctuation and the braces: 30 bytes, rounded up.
    var canonicalJSONMaxLength: Int {
        32 + CanonicalRawWriter.maxIntLength + CanonicalRawWriter.maxLength(fingerprint)
            + CanonicalRawWriter.maxLength(name)
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"at\":")
        w.int(at)
        w.raw(",\"fingerprint\":")
        w.string(fingerprint)
        w.raw(",\"name\":")
        w.string(name)
        w.raw("}")
    }
}

/// One reaction text on a message and who chose it.
public struct MessageReaction: Codable, Sendable, Hashable, CanonicalJSONWritable, CanonicalJSONRawWritable {
    public var reaction: String
    /// Names of the reactors, as this node shows them (this node's own name included).
    public var fromNames: [String]
    /// Whether this node's user is among them.
    public var mine: Bool

    public init(reaction: String, fromNames: [String], mine: Bool) {
        self.reaction = reaction
        self.fromNames = fromNames
        self.mine = mine
    }

    public func writeCanonicalJSON(into out: inout [UInt8]) {
        CanonicalRawWriter.append(self, to: &out)
    }

    /// Keys with their punctuation, the braces and `mine`'s value: 39 bytes, rounded up.
    var canonicalJSONMaxLength: Int {
        64 + CanonicalRawWriter.maxLength(fromNames) + CanonicalRawWriter.maxLength(reaction)
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"fromNames\":")
        w.array(fromNames)
        w.raw(",\"mine\":")
        w.bool(mine)
        w.raw(",\"reaction\":")
        w.string(reaction)
        w.raw("}")
    }
}
