extension ControlLimits {
    /// Longest room name in bytes: the wire limit for room names (ParleyCore's
    /// `RoomLimits.maxNameBytes`, the display-name limit of cards), checked here so a
    /// client learns it without a round trip; the daemon applies the full name rules.
    public static let maxRoomNameBytes = 64
    /// Most members of a room, this node included (`rooms.create` takes one fewer peer):
    /// ParleyCore's `RoomLimits.maxMembers`, which bounds the fan-out of a room message.
    public static let maxRoomMembers = 64
}
