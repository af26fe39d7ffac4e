import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Errors a local user can cause with replies, edits, deletes, reactions and the status
/// line, each saying what to do.
enum ConversationError: Error, CustomStringConvertible {
    case messageNotFound(String)
    case messageAmbiguous(String, Int)
    /// The message named is stored but its row is damaged (`UnreadableRow`): it cannot be
    /// read, so nothing can be done to it.
    case messageUnreadable(String, cursor: Int64)
    case refused(ActionRefusal, String)
    case invalidReaction(ReactionError)
    case invalidStatus(PresenceStatusError)
    /// Too many of our changes wait for a peer that has not taken them.
    case queueFull(Int)

    var description: String {
        switch self {
        case .messageNotFound(let q):
            return "no message with id '\(q)' (copy the id from `parley read --ids` or the chat view)"
        case let .messageUnreadable(q, cursor):
            return
                "message '\(q)' is damaged in this node's store (cursor \(cursor)) and cannot be read; parleyd's log says what is wrong with it"
        case let .messageAmbiguous(q, n):
            return "'\(q)' is the start of \(n) message ids; give more of the id"
        case let .refused(.notAuthor, id):
            return "message \(id.prefix(8)) was written by someone else: you can only edit or delete your own messages"
        case let .refused(.notRoomMember, id):
            return "message \(id.prefix(8)) is in a room you are no longer a member of"
        case let .refused(.targetDeleted, id):
            return "message \(id.prefix(8)) was deleted for everyone; nothing is left to change"
        case let .refused(reason, id):
            return "message \(id.prefix(8)): \(reason)"
        case .invalidReaction(let e): return e.description
        case .invalidStatus(let e): return e.description
        case .queueFull(let n):
            return
                "\(n) edits, deletes and reactions already wait for this conversation; nothing more is accepted until some are delivered"
        }
    }

    var rpcError: JSONRPCError {
        switch self {
        case .messageNotFound, .refused(.unknownTarget, _): return JSONRPCError(.messageNotFound, description)
        case .messageAmbiguous, .invalidReaction, .invalidStatus: return .invalidParams(description)
        case .refused: return JSONRPCError(.notPermitted, description)
        case .queueFull, .messageUnreadable: return JSONRPCError(.storageFailed, description)
        }
    }
}
