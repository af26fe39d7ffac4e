import ParleyCore

/// Who must receive room traffic (docs/PROTOCOL.md, "Rooms"): every member ends up with
/// every operation, and the resolver makes their views agree.
///
/// An operation this node accepts for the first time goes to every member of the room in
/// this node's resolved view (joined or invited: an invited member needs the operations to
/// see its invitation and to join), and to the target of a removal (so it learns it was
/// removed), except this node, the operation's author and the peer it came from (they have
/// it). Only a node that has joined the room (or wrote the operation) forwards: an invited
/// node holds the invitation and tells no one anything until its person accepts. When the
/// view gains members, each newcomer gets the room's whole operation log, so it can
/// resolve the room itself. Room messages go to joined members only: an invitation nobody
/// accepts never holds messages in anyone's outbox.
public enum RoomDistribution {
    public struct OperationPlan: Sendable, Equatable {
        /// Queue the new operation for these identities (ascending by bytes).
        public var operationTo: [IdentityPublicKey]
        /// Queue the room's whole log for these newcomers (ascending by bytes).
        public var wholeLogTo: [IdentityPublicKey]

        public static let nothing = OperationPlan(operationTo: [], wholeLogTo: [])
    }

    public static func plan(
        for op: RoomOperation, before: RoomState?, after: RoomState, me: IdentityPublicKey,
        receivedFrom peer: IdentityPublicKey?
    ) -> OperationPlan {
        let forwards = op.actor == me || after.hasJoined(me) || (before?.hasJoined(me) ?? false)
        guard forwards else { return .nothing }
        var recipients = Set(after.members)
        if case .remove(let target) = op.change { recipients.insert(target) }
        recipients.remove(me)
        recipients.remove(op.actor)
        if let peer { recipients.remove(peer) }
        var newcomers: Set<IdentityPublicKey> = []
        if let before { newcomers = Set(after.members).subtracting(before.members).subtracting([me]) }
        // A node that just joined sends its join to everyone; the members it did not know of
        // before it joined already have the log from whoever added them.
        return OperationPlan(operationTo: sorted(recipients), wholeLogTo: sorted(newcomers))
    }

    /// A room message of ours goes to every other joined member of our view.
    public static func messageRecipients(in state: RoomState, me: IdentityPublicKey) -> [IdentityPublicKey] {
        state.joined.filter { $0 != me }
    }

    /// What to do with a room message from `sender`.
    public enum MessageVerdict: Sendable, Equatable {
        /// Both are joined members in this node's view: store, show, acknowledge.
        case accept
        /// The sender is not a joined member in this node's view yet (the operation that
        /// makes it one may still be on its way): keep it, unacknowledged, until the room
        /// changes; the sender keeps it queued meanwhile, so nothing is lost.
        case hold
        /// This node is not a joined member (it left, was removed, or never joined): the
        /// message is not for it. Acknowledged (the sender's resend would change nothing)
        /// and logged.
        case notForUs
    }

    public static func messageVerdict(in state: RoomState?, from sender: IdentityPublicKey, me: IdentityPublicKey)
        -> MessageVerdict
    {
        guard let state, state.hasJoined(me) else { return .notForUs }
        return state.hasJoined(sender) ? .accept : .hold
    }

    private static func sorted(_ s: Set<IdentityPublicKey>) -> [IdentityPublicKey] {
        s.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }
}
