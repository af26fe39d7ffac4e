/// A change to a message already sent: an edit, a delete-for-everyone (tombstone) or a
/// reaction. Each action is a small record with its own id, acknowledged and resent like a
/// chat, so an action reaches a peer that was offline when it was made.
///
/// Who may do what is not the record's business: the receiver checks that the session's
/// peer is the author of an edited or deleted message (see `ConversationRules` in
/// ParleyNodeCore). The Noise session proves the peer's identity, so the record carries no
/// signature of its own: there is no relay that could forge one in between.
public struct MessageActionRecord: Equatable, Sendable {
    /// Fixed part of every action's payload: id, sequence, createdAt, target.
    public static let headerLength = MessageID.length + 8 + 8 + MessageID.length

    public enum Action: Equatable, Sendable {
        /// Replaces the target's body. The target must be a message the author sent.
        case edit(body: String)
        /// Removes the target's body everywhere; what stays is a placeholder "deleted".
        case delete
        /// Adds (`added`) or withdraws one reaction of the author to the target.
        case reaction(Reaction, added: Bool)
    }

    /// The action's own id (16 random bytes): what its ack carries, and what a receiver
    /// de-duplicates it by, together with the author.
    public var id: MessageID
    /// From the author's message sequence counter: a later action on one message wins
    /// over an earlier one that arrives after it (a resend).
    public var sequence: UInt64
    /// Author's clock, Unix milliseconds (informational only).
    public var createdAt: UInt64
    /// The message acted on.
    public var target: MessageID
    public var action: Action
    /// The room of a room message (types 0x13-0x15, the room id before the rest); nil in
    /// the direct conversation of the session (types 0x0A-0x0C).
    public var room: RoomID?

    public init(
        id: MessageID, sequence: UInt64, createdAt: UInt64, target: MessageID, action: Action,
        room: RoomID? = nil
    ) {
        self.id = id
        self.sequence = sequence
        self.createdAt = createdAt
        self.target = target
        self.action = action
        self.room = room
    }

    var recordType: AppRecord.RecordType {
        switch (action, room == nil) {
        case (.edit, true): return .edit
        case (.delete, true): return .delete
        case (.reaction, true): return .reaction
        case (.edit, false): return .roomEdit
        case (.delete, false): return .roomDelete
        case (.reaction, false): return .roomReaction
        }
    }

    /// The record type this action is sent as (0x0A-0x0C, in a room 0x13-0x15).
    public var recordTypeByte: UInt8 { recordType.rawValue }

    func payload() -> [UInt8] {
        var p = [UInt8]()
        p.reserveCapacity(RoomID.length + Self.headerLength + 1)
        if let room { p.append(contentsOf: room.bytes) }
        p.append(contentsOf: id.bytes)
        p.appendUInt64(sequence)
        p.appendUInt64(createdAt)
        p.append(contentsOf: target.bytes)
        switch action {
        case .edit(let body): p.append(contentsOf: body.utf8)
        case .delete: break
        case let .reaction(reaction, added):
            p.append(added ? 1 : 0)
            p.append(contentsOf: reaction.text.utf8)
        }
        return p
    }

    static func decode(_ type: AppRecord.RecordType, _ r: inout ByteReader) throws -> MessageActionRecord {
        let inRoom = [.roomEdit, .roomDelete, .roomReaction].contains(type)
        let room = inRoom ? RoomID(exactly: try r.readBytes(RoomID.length)) : nil
        let id = MessageID(exactly: try r.readBytes(MessageID.length))
        let sequence = try r.readUInt64()
        let createdAt = try r.readUInt64()
        let target = MessageID(exactly: try r.readBytes(MessageID.length))
        let action: Action
        switch type {
        case .edit, .roomEdit:
            let body = try r.readBytes(r.remaining)
            guard body.count <= WireLimits.maxBodyBytes else { throw AppRecordError.bodyTooLarge(body.count) }
            guard let text = String(validating: body, as: UTF8.self) else { throw AppRecordError.invalidUTF8 }
            action = .edit(body: text)
        case .delete, .roomDelete:
            guard r.isAtEnd else { throw AppRecordError.malformed(type: type.rawValue, reason: "trailing bytes") }
            action = .delete
        case .reaction, .roomReaction:
            let flag = try r.readUInt8()
            guard flag <= 1 else {
                throw AppRecordError.malformed(type: type.rawValue, reason: "reaction flag \(flag)")
            }
            do {
                action = .reaction(try Reaction(utf8: try r.readBytes(r.remaining)), added: flag == 1)
            } catch let e as ReactionError {
                throw AppRecordError.malformed(type: type.rawValue, reason: e.description)
            }
        default:
            throw AppRecordError.malformed(type: type.rawValue, reason: "not a message action")
        }
        return MessageActionRecord(
            id: id, sequence: sequence, createdAt: createdAt, target: target, action: action,
            room: room)
    }
}
