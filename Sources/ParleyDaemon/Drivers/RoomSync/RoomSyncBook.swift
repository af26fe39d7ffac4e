import ParleyCore
import ParleyNodeCore

/// `RoomSyncDriver`'s state (issue 30): the pure `RoomSyncStateMachine` and the signed
/// messages sent on each session and not yet acknowledged (so an acknowledgement, which
/// names only a message id, tells the machine which member now holds which message).
/// In memory (but `syncing`): the store holds the messages, and a new session compares again.
struct RoomSyncBook {
    var machine = RoomSyncStateMachine()
    /// Whether `machine` holds the store's ranges yet (loaded on first use).
    var loaded = false
    /// Per session peer: the signed messages sent to it and not acknowledged. Bounded by
    /// the pushes in flight (`RoomSyncLimits.maxInFlightPerSessionRoom` per room) and the
    /// room outbox's send window; dropped when the session ends.
    var pushed: [IdentityPublicKey: [MessageID: (room: RoomID, author: IdentityPublicKey, sequence: UInt64)]] = [:]
    /// Peers seen with feature bit 3 (room sync) at their latest session: an author sends its
    /// room messages itself only to a few of them (`RoomFanOut`). Kept in the store too
    /// (`Store.setRoomSyncPeer`), loaded on first use (`syncingLoaded`), so after a restart
    /// the author still uses fan-out instead of sending to every member it has not met again.
    var syncing: Set<IdentityPublicKey> = []
    /// Peers seen with feature bit 5 (operation summaries) at their latest session: this
    /// node sends a room operation itself only to a few of them (`RoomOperationFanOut`).
    /// Kept and loaded like `syncing`.
    var summarizing: Set<IdentityPublicKey> = []
    /// Peers seen with feature bit 7 (removal caps) at their latest session: this node signs
    /// a capped remove only when every other member of the room is among them. Kept and
    /// loaded like `syncing`.
    var capReaders: Set<IdentityPublicKey> = []
    var syncingLoaded = false
    /// When this node last answered a peer's operation summary of a room with its own
    /// (`RoomOperationSummaryLimits.replyInterval`); dropped with the session.
    var summaryReplies: [IdentityPublicKey: [RoomID: MonotonicInstant]] = [:]
    /// When this node last read a peer's operation summary of a room
    /// (`RoomOperationSummaryLimits.readInterval`) and how many operations it queued in
    /// answer to that session's summaries of it (`RoomOperationSummaryLimits.operationBudget`);
    /// dropped with the session.
    var summariesRead: [IdentityPublicKey: [RoomID: SummaryReads]] = [:]

    struct SummaryReads {
        var last: MonotonicInstant
        var operationsSent = 0
    }
    /// Signed changes whose target message is not held yet, with the peer that handed each
    /// over (acknowledged to it once applied). Bounded: `RoomSyncLimits.maxWaitingChanges`.
    var waitingChanges: [(change: SignedRoomMessage, from: IdentityPublicKey)] = []
}
