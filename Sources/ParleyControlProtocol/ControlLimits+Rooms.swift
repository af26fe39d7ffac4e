extension ControlLimits {
    /// Longest room name in bytes: the wire limit for room names (ParleyCore's
    /// `RoomLimits.maxNameBytes`, the display-name limit of cards), checked here so a
    /// client learns it without a round trip; the daemon applies the full name rules.
    public static let maxRoomNameBytes = 64
    /// Most members a new room lists, this node included (`rooms.create` takes one fewer
    /// peer): ParleyCore's `RoomLimits.maxCreateMembers`, the most one create operation
    /// lists. A room grows past it by `rooms.add`, up to `maxRoomMembers`.
    public static let maxCreateMembers = 64
    /// Most members of a room: ParleyCore's `RoomLimits.maxMembers` (an `rooms.add` to a
    /// full room is refused).
    public static let maxRoomMembers = 1_000
}
