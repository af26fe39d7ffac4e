import ParleyCore
import ParleyStore

/// Room errors a local user can cause through the control socket, each saying what to do.
enum RoomError: Error, CustomStringConvertible {
    case notFound(String)
    case ambiguous(String, [RoomRecord])
    /// This node is not (or no longer) a member of the room.
    case notMember(RoomRecord)
    case alreadyMember(room: String, peer: String)
    case notAMember(room: String, peer: String)
    case tooManyMembers(Int)
    /// The operation could not be built (name or member rules).
    case invalid(String)
    case tooManyOperations(RoomRecord)
    case queueFull(RoomRecord, Int)

    var description: String {
        switch self {
        case .notFound(let q):
            return "no room matches '\(q)' (use #NAME or an id prefix of at least \(RoomDaemonLimits.minIDPrefix) hex digits; see `parley rooms`)"
        case let .ambiguous(q, c):
            return "'\(q)' matches \(c.count) rooms: " + c.map { "#\($0.name) (\($0.id.prefix(8)))" }.joined(separator: ", ")
                + "; use an id prefix"
        case .notMember(let r):
            return "you are not a member of #\(r.name); a member has to add you again"
        case let .alreadyMember(room, peer):
            return "\(peer) is already a member of #\(room)"
        case let .notAMember(room, peer):
            return "\(peer) is not a member of #\(room)"
        case .tooManyMembers(let n):
            return "a room has at most \(n) members"
        case .invalid(let why):
            return why
        case .tooManyOperations(let r):
            return "#\(r.name) has reached \(RoomLimits.maxOperationsPerRoom) membership changes; create a new room"
        case let .queueFull(r, n):
            return "\(n) messages to #\(r.name) are still undelivered; nothing more is accepted until some are delivered"
        }
    }
}
