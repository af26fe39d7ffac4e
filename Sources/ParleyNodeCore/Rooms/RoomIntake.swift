import ParleyCore

/// The inputs of `RoomAdmission.verdict` that the room driver used to compute inline
/// (issue 32, "room intake inputs"): pure functions of the room's operations and state.
public enum RoomIntake {
    /// Operations of `actor` held in the room's graph that the resolver voided (removed
    /// concurrently or overruled) before the new one: `RoomAdmission`'s bound on what a
    /// removed member can fill the room with.
    public static func unapplied(
        by actor: IdentityPublicKey, among operations: some Collection<RoomOperation>, before: RoomState?
    ) -> Int {
        guard let before else { return 0 }
        return operations.filter {
            $0.actor == actor && [.removedConcurrently, .overruled].contains(before.rejected[$0.hash])
        }.count
    }

    /// For an operation of a room this node holds nothing of, with the other operations of
    /// that room the same peer sent (`batch`): the create to resolve the batch from, once
    /// something in it names `me` (a create listing it, or an operation whose target it
    /// is). Nil: keep waiting (resolving the whole log is only worth it once something
    /// names this node; whatever names a stranger's key is not an invitation).
    public static func invitationRoot(of batch: [RoomOperation], me: IdentityPublicKey) -> RoomOperation? {
        let namesMe = batch.contains { o in
            if case .create(_, let members, _) = o.change { return members.contains(me) }
            return o.target == me
        }
        guard namesMe else { return nil }
        return batch.first { $0.kind == .create }
    }
}
