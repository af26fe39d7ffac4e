import ParleyControlProtocol
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
    /// The rules do not allow the change (role, rank, policy, or it changes nothing).
    case refused(RoomRecord, RoomOperation.Change, RoomOperationRejection)
    /// accept/decline of a room this node is not invited to.
    case notInvited(RoomRecord)
    /// Sending to a room whose invitation is not accepted yet.
    case notJoined(RoomRecord)

    static func explain(_ change: RoomOperation.Change, _ why: RoomOperationRejection) -> String {
        switch why {
        case .notPermitted:
            switch change {
            case .add:
                return "only admins may add members to this room (ask an admin, or an owner to change the policy)"
            case .remove: return "only an admin or owner may remove others, and only members ranked below them"
            case .setRole:
                return "only an admin or owner may change roles, of members ranked below them, up to their own rank"
            case .rename, .setPolicy: return "only an admin or owner may do this"
            default: return "not permitted by your role"
            }
        case .noEffect: return "that changes nothing"
        case .roomFull: return "a room has at most \(RoomLimits.maxMembers) members"
        case .notMember: return "you must have joined the room first"
        default: return "refused (\(why.rawValue))"
        }
    }

    var description: String {
        switch self {
        case .notFound(let q):
            return
                "no room matches '\(q)' (use #NAME or an id prefix of at least \(RoomDaemonLimits.minIDPrefix) hex digits; see `parley rooms`)"
        case let .ambiguous(q, c):
            return "'\(q)' matches \(c.count) rooms: "
                + c.map { "#\($0.name) (\($0.id.hex.prefix(8)))" }.joined(separator: ", ")
                + "; use an id prefix"
        case .notMember(let r) where r.status == .retired:
            return
                "#\(r.name) is a room of protocol version 1, kept as history; create it again with `parley room create`"
        case .notMember(let r):
            return "you are not a member of #\(r.name); a member has to add you again"
        case .notJoined(let r):
            return
                "you are invited to #\(r.name) but have not joined; accept with `parley room accept \(ShellQuoting.room(r.name))`"
        case .notInvited(let r):
            return r.status == .joined ? "you are already in #\(r.name)" : "you have no open invitation to #\(r.name)"
        case let .refused(r, change, why):
            return "#\(r.name): " + Self.explain(change, why)
        case let .alreadyMember(room, peer):
            return "\(peer) is already a member of #\(room)"
        case let .notAMember(room, peer):
            return "\(peer) is not a member of #\(room)"
        case .tooManyMembers(let n):
            return "a new room lists at most \(n) members (you included); create it, then add the others one by one"
        case .invalid(let why):
            return why
        case .tooManyOperations(let r):
            return "#\(r.name) has reached \(RoomLimits.maxOperationsPerRoom) membership changes; create a new room"
        case let .queueFull(r, n):
            return
                "\(n) messages to #\(r.name) are still undelivered; nothing more is accepted until some are delivered"
        }
    }
}
