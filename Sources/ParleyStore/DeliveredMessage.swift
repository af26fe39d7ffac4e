import ParleyCore

/// What a delivery mark changed: enough for the `message.delivered` notification and its
/// journal row, without reading back the message just updated (its body, sequence and the
/// rest are unchanged by the mark; who needs them reads the message by `rowID`).
public struct DeliveredMessage: Sendable, Equatable {
    /// The message's local row (the journal's reference to it).
    public var rowID: Int64
    /// The message id.
    public var id: MessageID
    /// The peer whose acknowledgement delivered it (for a room message, the room: the
    /// message's `recipient`).
    public var recipient: MessageParty
    /// The room of a room message; nil for a direct one.
    public var room: RoomID?
    /// Unix ms when the acknowledgement arrived.
    public var deliveredAt: Int64
    /// The journal event written in the mark's own transaction (`MessageJournal`), if asked.
    public var journalEventID: Int64?

    public init(rowID: Int64, id: MessageID, recipient: MessageParty, room: RoomID?, deliveredAt: Int64) {
        self.rowID = rowID
        self.id = id
        self.recipient = recipient
        self.room = room
        self.deliveredAt = deliveredAt
    }

    /// The mark of a message read whole (the room path reads it anyway).
    public init(_ m: StoredMessage) {
        self.init(rowID: m.rowID, id: m.id, recipient: m.recipient, room: m.room, deliveredAt: m.deliveredAt ?? 0)
    }

    /// The conversation it belongs to: its room, else the recipient.
    public var conversation: MessageParty {
        room.map { .room($0) } ?? recipient
    }
}
