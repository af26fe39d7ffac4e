/// A chat message addressed to a room, sent by its author to each member separately over
/// the pairwise session (there is no relay). The receiver shows it in the room only if the
/// author is a member in its own view of the room.
public struct RoomChatRecord: Equatable, Sendable {
    /// Fixed part of the payload: id, room id, sequence, createdAt.
    public static let headerLength = MessageID.length + RoomID.length + 8 + 8

    public var id: MessageID
    public var roomID: RoomID
    /// The author's sequence number (the same counter as its direct messages): receivers
    /// show one author's room messages in this order.
    public var sequence: UInt64
    /// Author's clock, Unix milliseconds (informational only).
    public var createdAt: UInt64
    public var body: String
    /// The room message this one answers (quotes); nil for an ordinary room message. Sent
    /// as a `roomReply` record (0x12) when set.
    public var replyTo: MessageID?

    public init(
        id: MessageID, roomID: RoomID, sequence: UInt64, createdAt: UInt64, body: String,
        replyTo: MessageID? = nil
    ) {
        self.id = id
        self.roomID = roomID
        self.sequence = sequence
        self.createdAt = createdAt
        self.body = body
        self.replyTo = replyTo
    }
}
