import ParleyCore

/// The message an edit, delete or reaction names, as the deciding node knows it.
public struct ActionTarget: Equatable, Sendable {
    /// Who wrote the target message.
    public var author: IdentityPublicKey
    /// The other party of the direct conversation the target belongs to (the recipient of
    /// our own message, the sender of an incoming one); nil for a room message.
    public var conversationPeer: IdentityPublicKey?
    public var isDeleted: Bool
    /// The author's sequence of the latest edit applied to it (nil: never edited).
    public var appliedChangeSequence: Int64?
    /// The room of a room message; nil for a direct message.
    public var room: RoomID?

    public init(
        author: IdentityPublicKey, conversationPeer: IdentityPublicKey?, isDeleted: Bool,
        appliedChangeSequence: Int64?, room: RoomID? = nil
    ) {
        self.author = author
        self.conversationPeer = conversationPeer
        self.isDeleted = isDeleted
        self.appliedChangeSequence = appliedChangeSequence
        self.room = room
    }
}

/// What a node does with an edit, delete or reaction that arrived from a peer.
public enum ActionVerdict: Equatable, Sendable {
    /// Apply it to the store and tell the user.
    case apply
    /// Already applied, or overtaken by a later change of the same author (a resend after a
    /// lost ack): acknowledged, changes nothing.
    case stale
    /// Not allowed: acknowledged (a resend would not change the answer), not applied, logged.
    case refuse(ActionRefusal)
}

public enum ActionRefusal: Equatable, Sendable, CustomStringConvertible {
    /// No message with that id in the conversation with the sender.
    case unknownTarget
    /// An edit or delete of a message someone else wrote.
    case notAuthor
    /// The target was deleted for everyone: nothing is left to edit or react to.
    case targetDeleted
    /// The reactor already has `WireLimits.maxReactionsPerReactor` reactions on the target.
    case tooManyReactions
    /// A room action from (or by) someone who is not a member of the room, in this node's
    /// view, or to a node that is not one.
    case notRoomMember

    public var description: String {
        switch self {
        case .unknownTarget: return "no such message in this conversation"
        case .notAuthor: return "only the author may edit or delete a message"
        case .targetDeleted: return "the message was deleted"
        case .tooManyReactions:
            return "at most \(WireLimits.maxReactionsPerReactor) reactions per person on one message"
        case .notRoomMember: return "not a member of the room"
        }
    }
}

/// Who may edit, delete and react, and in which order changes apply (docs/PROTOCOL.md,
/// "Conversation records"). Pure: the store supplies what it knows of the target.
public enum ConversationRules {
    /// Judges `action` (an edit, delete or reaction with the author's `sequence`) that
    /// arrived over the session of `sender`: in their direct conversation, or with `room`
    /// in that room.
    ///
    /// - Parameters:
    ///   - room: the room the action names; nil for the direct conversation.
    ///   - roomAccepts: for a room action, whether both `sender` and this node are members
    ///     of the room in this node's view (`RoomDistribution.acceptsMessage`).
    ///   - target: the named message if this node has it, nil otherwise.
    ///   - reactionsBySender: how many reactions `sender` has on the target now (for adds).
    ///   - reactionIsNew: an added reaction `sender` does not already have on the target.
    public static func judge(
        _ action: MessageActionRecord.Action, sequence: Int64, from sender: IdentityPublicKey,
        room: RoomID? = nil, roomAccepts: Bool = false,
        target: ActionTarget?, reactionsBySender: Int = 0,
        reactionIsNew: Bool = true
    ) -> ActionVerdict {
        if let room {
            guard roomAccepts else { return .refuse(.notRoomMember) }
            guard let target, target.room == room else { return .refuse(.unknownTarget) }
        } else {
            // A message of another conversation (someone else's, or a room's) is as unknown
            // as one that does not exist: the sender learns nothing from the difference.
            guard let target, target.room == nil, target.conversationPeer != nil,
                target.author == sender || target.conversationPeer == sender
            else { return .refuse(.unknownTarget) }
        }
        guard let target else { return .refuse(.unknownTarget) }
        switch action {
        case .edit, .delete:
            guard target.author == sender else { return .refuse(.notAuthor) }
            if target.isDeleted { return .stale }  // a delete is final; later edits change nothing
            if case .edit = action, let applied = target.appliedChangeSequence, applied >= sequence { return .stale }
            return .apply
        case let .reaction(_, added):
            if target.isDeleted { return added ? .refuse(.targetDeleted) : .stale }
            if added, reactionIsNew, reactionsBySender >= WireLimits.maxReactionsPerReactor {
                return .refuse(.tooManyReactions)
            }
            return .apply
        }
    }

    /// May this node's own user (`me`) perform `action` on `target`? The same rule as for
    /// peers, so a node never sends what its peer would refuse.
    /// `amRoomMember`: for a room message, whether this node is a member of its room now.
    public static func judgeLocal(
        _ action: MessageActionRecord.Action, me: IdentityPublicKey,
        target: ActionTarget?, amRoomMember: Bool = false, reactionsByMe: Int = 0,
        reactionIsNew: Bool = true
    ) -> ActionRefusal? {
        guard let target else { return .unknownTarget }
        if target.room != nil {
            guard amRoomMember else { return .notRoomMember }
        } else {
            guard target.conversationPeer != nil else { return .unknownTarget }
        }
        switch action {
        case .edit, .delete:
            guard target.author == me else { return .notAuthor }
            return target.isDeleted ? .targetDeleted : nil
        case let .reaction(_, added):
            if target.isDeleted { return .targetDeleted }
            if added, reactionIsNew, reactionsByMe >= WireLimits.maxReactionsPerReactor { return .tooManyReactions }
            return nil
        }
    }
}
