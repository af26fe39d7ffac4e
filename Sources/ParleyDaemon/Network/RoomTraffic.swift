import ParleyCore

/// A room record received on a session. Operations and chats travel in one ordered list so
/// the node handles them in the order the peer sent them: an operation that makes the
/// sender a member is applied before the sender's first message to the room.
enum RoomTraffic {
    case operation(RoomOperation)
    case chat(RoomChatRecord)
    /// A signed room message (room sync), from its author or passed on by a member.
    case signed(RoomMessageArrival)
    /// A member's summary of what it holds of a room (room sync).
    case have(RoomHave)
    /// A member's card passed on through the room (room cards), after the operations that
    /// make it a member.
    case card(RoomCardRecord)
    /// The heads of a member's operation graph of a room (operation summaries).
    case operationsHave(RoomOperationsHave)
}
