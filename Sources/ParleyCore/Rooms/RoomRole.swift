/// A member's rank in a room (docs/PROTOCOL.md, "Who may do what"). Ranks are compared:
/// an actor may remove or demote only a member ranked strictly below it, so two members of
/// the same rank can never remove each other and a removed member can never void the
/// operation of someone who outranked it.
public enum RoomRole: UInt8, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// Talks, adds members unless the room is "only admins may add", leaves.
    case member = 1
    /// Adds, removes and promotes members, renames the room, sets its policy.
    case admin = 2
    /// The creator (and whoever an owner makes owner): everything an admin may, and acts
    /// on admins.
    case owner = 3

    public static func < (a: RoomRole, b: RoomRole) -> Bool { a.rawValue < b.rawValue }

    public var description: String {
        switch self {
        case .member: return "member"
        case .admin: return "admin"
        case .owner: return "owner"
        }
    }

    public init?(name: String) {
        guard let r = Self.allCases.first(where: { $0.description == name }) else { return nil }
        self = r
    }
}
