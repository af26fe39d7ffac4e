/// When to purge deleted messages' words from the search index. SQLite's contentless FTS5
/// index (3.40 has no 'secure-delete') keeps a deleted row's terms and positions in its
/// segments until they are merged, so a deleted text could be rebuilt from the file; an
/// 'optimize' merges them away, at a cost that grows with the index. The first delete is
/// purged at once; further ones within `minInterval` are purged together when it ends, so
/// a peer deleting its messages one by one costs at most one purge per interval.
public struct ErasurePurgeSchedule: Sendable {
    public enum Action: Equatable, Sendable {
        case purgeNow
        /// Purge at this instant (the driver sets a timer and calls `purged`).
        case purgeAt(MonotonicInstant)
        /// A purge is already scheduled; it will include this delete.
        case alreadyScheduled
    }

    /// Ten seconds: a person deleting a few messages sees each purged at once or within
    /// seconds; a flood costs one purge per interval.
    public var minInterval: Duration
    private var lastPurge: MonotonicInstant?
    private var scheduled = false

    public init(minInterval: Duration = .seconds(10)) { self.minInterval = minInterval }

    /// A delete was applied to the store.
    public mutating func deleteApplied(now: MonotonicInstant) -> Action {
        if scheduled { return .alreadyScheduled }
        if let last = lastPurge, now - last < minInterval {
            scheduled = true
            return .purgeAt(last + minInterval)
        }
        lastPurge = now
        return .purgeNow
    }

    /// The scheduled purge ran.
    public mutating func purged(now: MonotonicInstant) {
        scheduled = false
        lastPurge = now
    }

    /// Whether a purge is still owed (the driver runs it before closing the store).
    public var isPending: Bool { scheduled }
}
