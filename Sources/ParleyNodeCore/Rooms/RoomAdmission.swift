import ParleyCore

/// Whether this node keeps a room operation it received (docs/PROTOCOL.md, "What a node
/// keeps"): only operations of rooms it is a member of or invited to, and only operations
/// that can matter. Pure: the driver resolves the room with and without the operation and
/// asks.
public enum RoomAdmission {
    /// Invitations (rooms this node is invited to and has not answered) kept per peer that
    /// delivered them: a flood of fake creates from one peer fills only its own share, and
    /// invitations from everyone else still arrive.
    public static let maxInvitationsPerSender = 8
    /// An invitation nobody answered (and that saw no change) for this long is forgotten:
    /// it frees the inviting peer's share and the space.
    public static let invitationLifetimeDays = 30
    /// Operations of one actor that are in a room's graph but not applied (voided by a
    /// concurrent removal) kept per room: a removed member cannot fill the room's operation
    /// limit with back-dated operations.
    public static let maxUnappliedPerActor = 8
    /// Operations held in memory per sending peer: those waiting for a parent, and the log
    /// of a room this node does not know yet until it reaches the operation that invites
    /// this node (a newcomer receives the whole log, create first, and its invitation may
    /// be the last of 4,096 operations). An honest node forwards only operations of its
    /// graph, parents first, so anything else waiting is what a hostile or broken peer
    /// causes: at most about 9 MiB per sending peer (4,097 operations of at most 2,247
    /// bytes), for `waitingTimeoutSeconds`.
    public static let maxWaitingPerSender = RoomLimits.maxOperationsPerRoom + 1
    /// Operations held in memory over all sending peers: four whole logs of the largest
    /// room arriving at once (about 35 MiB). The share above is per key, and a key costs a
    /// LAN attacker one handshake: without this, keys made up one after the other held
    /// 9 MiB each for `waitingTimeoutSeconds`, as much memory as the link carries in ten
    /// minutes. When full, a new operation takes the place of one of the peer with the
    /// most waiting (`WaitingRoomOperations`).
    public static let maxWaitingInAll = 4 * maxWaitingPerSender
    /// How long a waiting operation is held before it is dropped.
    public static let waitingTimeoutSeconds = 600

    public enum Refusal: String, Sendable, Equatable {
        /// A room this node is not in and not invited to.
        case notForUs
        /// The peer already has `maxInvitationsPerSender` unanswered invitations here.
        case tooManyInvitations
        /// The room already holds `RoomLimits.maxOperationsPerRoom` operations.
        case roomFull
        /// The actor already has `maxUnappliedPerActor` voided operations in the room.
        case tooManyUnapplied
        /// Final verdicts of the resolver (not a member, not permitted, no effect, ...).
        case notAuthorised
    }

    public enum Verdict: Sendable, Equatable {
        /// Store (durably) and, if the room is joined, forward.
        case keep
        /// A create that invites this node: store it as an invitation.
        case invitation
        /// A parent is missing: hold in memory (bounded), retry when the room changes.
        case wait
        case refuse(Refusal, detail: String)
    }

    /// - Parameters:
    ///   - before: the room as resolved without the operation (nil: no create held).
    ///   - after: the room resolved with it (for an unknown room: with the create and the
    ///     other operations of that room the same peer sent, held meanwhile; nil while no
    ///     create has come).
    ///   - operationCount: operations stored for the room.
    ///   - unappliedByActor: operations of the actor stored in the room and not applied.
    ///   - invitationsFromSender: unanswered invitations the sending peer delivered.
    public static func verdict(
        for op: RoomOperation, before: RoomState?, after: RoomState?, me: IdentityPublicKey,
        operationCount: Int, unappliedByActor: Int, invitationsFromSender: Int
    ) -> Verdict {
        guard let after else { return .wait }
        guard let before else {
            // An unknown room: an invitation once the log so far names this node; until
            // then (a newcomer's log before its add) it waits, in memory and bounded.
            guard after.isInvited(me) || after.hasJoined(me) else { return .wait }
            guard invitationsFromSender < maxInvitationsPerSender else {
                return .refuse(
                    .tooManyInvitations, detail: "\(maxInvitationsPerSender) unanswered invitations from this peer")
            }
            return .invitation
        }
        guard before.isMember(me) || after.isMember(me) else {
            return .refuse(.notForUs, detail: "a room this node left or was removed from")
        }
        if after.waiting.contains(op.hash) { return .wait }
        guard operationCount < RoomLimits.maxOperationsPerRoom else {
            return .refuse(.roomFull, detail: "\(RoomLimits.maxOperationsPerRoom) operations")
        }
        switch after.rejected[op.hash] {
        case nil:
            return .keep
        case .removedConcurrently?, .overruled?:
            // Not final: kept (so every member holds the same graph), within a bound.
            guard unappliedByActor < maxUnappliedPerActor else {
                return .refuse(.tooManyUnapplied, detail: "\(maxUnappliedPerActor) voided operations by this actor")
            }
            return .keep
        case let why?:
            return .refuse(.notAuthorised, detail: why.rawValue)
        }
    }
}
