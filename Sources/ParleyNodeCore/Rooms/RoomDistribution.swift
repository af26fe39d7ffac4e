import ParleyCore

/// Who must receive room traffic (docs/PROTOCOL.md, "Rooms"): every member ends up with
/// every operation, and the resolver makes their views agree.
///
/// An operation this node accepts for the first time (its own or received) goes to every
/// member of the room in this node's resolved view, and to the target of a removal (so it
/// learns it was removed), except this node, the operation's author and the peer it came
/// from (they have it). When the view gains members, each newcomer gets the room's whole
/// operation log, so it can resolve the room itself.
public enum RoomDistribution {
    public struct OperationPlan: Sendable, Equatable {
        /// Queue the new operation for these identities (ascending by bytes).
        public var operationTo: [IdentityPublicKey]
        /// Queue the room's whole log for these newcomers (ascending by bytes).
        public var wholeLogTo: [IdentityPublicKey]
    }

    public static func plan(for op: RoomOperation, before: RoomState?, after: RoomState, me: IdentityPublicKey,
                            receivedFrom peer: IdentityPublicKey?) -> OperationPlan {
        var recipients = Set(after.members)
        if case .remove(let target) = op.change { recipients.insert(target) }
        recipients.remove(me)
        recipients.remove(op.actor)
        if let peer { recipients.remove(peer) }
        var newcomers: Set<IdentityPublicKey> = []
        if let before { newcomers = Set(after.members).subtracting(before.members).subtracting([me]) }
        return OperationPlan(operationTo: sorted(recipients), wholeLogTo: sorted(newcomers))
    }

    /// A room message of ours goes to every other member of our view.
    public static func messageRecipients(in state: RoomState, me: IdentityPublicKey) -> [IdentityPublicKey] {
        state.members.filter { $0 != me }
    }

    /// Whether a room message from `sender` is taken: both it and this node must be
    /// members in this node's view of the room.
    public static func acceptsMessage(in state: RoomState?, from sender: IdentityPublicKey, me: IdentityPublicKey) -> Bool {
        guard let state else { return false }
        return state.isMember(sender) && state.isMember(me)
    }

    private static func sorted(_ s: Set<IdentityPublicKey>) -> [IdentityPublicKey] {
        s.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }
}
