import ParleyCore

/// A room record received on a session. Operations and chats travel in one ordered list so
/// the node handles them in the order the peer sent them: an operation that makes the
/// sender a member is applied before the sender's first message to the room.
enum RoomTraffic {
    case operation(RoomOperation)
    case chat(RoomChatRecord)
}
