import ParleyCore

/// The node's in-memory view of rooms: every room's decoded operations and resolved state,
/// so resolving after a new operation does not re-read and re-verify the whole history.
/// Filled lazily from the store (which stays the truth) and confined to the node's loop.
struct RoomBook {
    struct Entry {
        /// The pinned create operation, once known.
        var root: RoomOperation?
        var operations: [RoomOperationHash: RoomOperation] = [:]
        /// The resolved state, once the root is known.
        var state: RoomState?
    }

    var entries: [RoomID: Entry] = [:]
}

/// Limits of the daemon's room bookkeeping (the wire limits are `RoomLimits`).
enum RoomDaemonLimits {
    /// Distinct rooms (including ones whose create has not arrived) this node keeps
    /// operations for: bounds what peers can make it store for rooms it never joins.
    static let maxRooms = 1_024
    /// Undelivered outgoing messages per room, like `NodeLimits.maxQueuedPerPeer` for a
    /// peer: beyond it, sending fails loudly instead of the outbox growing without bound.
    static let maxQueuedPerRoom = 100_000
    /// Shortest room-id prefix a user may type (16 bits), like fingerprint prefixes.
    static let minIDPrefix = 4
}
