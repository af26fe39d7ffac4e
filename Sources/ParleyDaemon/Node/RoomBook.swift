import ParleyCore
import ParleyNodeCore

/// The rooms' state in memory, owned by `RoomDriver`: every room's decoded operations and
/// resolved state, so resolving after a new operation does not re-read and re-verify the
/// whole history. Filled lazily from the store (which stays the truth) and confined to the
/// node's loop.
struct RoomBook {
    struct Entry {
        /// The pinned create operation, once known.
        var root: RoomOperation?
        var operations: [RoomOperationHash: RoomOperation] = [:]
        /// The resolved state, once the root is known. Setting it derives `cappedRemovals`
        /// again (set `operations` first): O(applied operations), as building the state is.
        var state: RoomState? {
            didSet {
                cappedRemovals = state.map { RoomCappedRemovals(state: $0, operations: operations) } ?? .init()
            }
        }
        /// The valid capped removes in `state`: which held messages are shown as written
        /// after their author's removal (`AfterRemovalMarks`). Derived, never stored, so a
        /// mark goes by itself when its remove turns void.
        private(set) var cappedRemovals = RoomCappedRemovals()
        /// The room resolved incrementally (issue 30): a new operation is decided against
        /// this instead of replaying the room; `state` is its state. Built once per room
        /// from the stored operations (`RoomResolution.init`), then kept in memory.
        var resolution: RoomResolution?
    }

    var entries: [RoomID: Entry] = [:]

    /// Operations waiting for a parent, per peer that sent them (bounded, in memory only:
    /// `RoomAdmission.maxWaitingPerSender`).
    var waiting = WaitingRoomOperations()

    /// When an unknown room's waiting log is resolved to see whether it invites this node
    /// (per sender and room, so a stranger's log is not resolved again for each operation).
    var unknownRoomPacing = UnknownRoomResolutionPacing()

    /// Room messages from an author this node does not know as a joined member yet, per
    /// author, unacknowledged (the author keeps them queued): released when the room
    /// changes, not held beyond the bounds (`RoomDaemonLimits.maxHeldChat*`), dropped when
    /// the author's session ends.
    var heldChats = HeldRoomChats(
        limits: .init(
            perAuthor: RoomDaemonLimits.maxHeldChatsPerAuthor,
            bytesPerAuthor: RoomDaemonLimits.maxHeldChatBytesPerAuthor,
            bytes: RoomDaemonLimits.maxHeldChatBytes))

    /// Rooms whose waiting operations and held messages are to be offered again, and
    /// whether that is under way (so it runs as a loop, never as nested calls).
    var roomsToRetry: Set<RoomID> = []
    var retrying = false

    /// Room sync (issue 30): what to announce and pass on to which member; the driver
    /// owns its state (`RoomSyncBook`).
    let sync: RoomSyncDriver<Node>

    /// Room cards (issue 30): members' cards passed on with operations.
    var cards = RoomCardBook()
}

/// Limits of the daemon's room bookkeeping (the wire limits are `RoomLimits`).
enum RoomDaemonLimits {
    /// Undelivered outgoing messages per room, like `NodeLimits.maxQueuedPerPeer` for a
    /// peer: beyond it, sending fails loudly instead of the outbox growing without bound.
    static let maxQueuedPerRoom = 100_000
    /// Room messages held per author while the membership that explains them is awaited:
    /// about one window of messages; beyond it the newest are not held (nor acknowledged,
    /// so the author sends them again on the next session)...
    static let maxHeldChatsPerAuthor = 64
    /// ... and at most this many body bytes per author, and in all (held messages are only
    /// a shortcut: whatever is not held is resent by its author).
    static let maxHeldChatBytesPerAuthor = 256 * 1024
    static let maxHeldChatBytes = 8 * 1024 * 1024
    /// Shortest room-id prefix a user may type (16 bits), like fingerprint prefixes.
    static let minIDPrefix = 4
}
