/// Which of the message path's commits are on disk, and what waits for which (group
/// commit, `Store.startGroupCommit`). Pure bookkeeping, no I/O: the store keeps one under
/// its lock and runs what `takeReady` hands back once the lock is released.
///
/// Tickets number the commits made without waiting for the disk ("deferred"), from 1.
/// A ticket is durable once an fdatasync of the WAL that began after its commit has
/// returned (`synced(through:)`), or once any later commit was synced by SQLite itself
/// (`committedDurably`): the WAL is appended in commit order and a sync covers the whole file.
struct GroupCommitLedger<Waiter> {
    /// The newest deferred commit (0: none yet).
    private(set) var lastDeferred: UInt64 = 0
    /// Every deferred commit up to this one is on disk.
    private(set) var durableThrough: UInt64 = 0
    /// What runs once its ticket is durable; not in ticket order.
    private var waiters: [(through: UInt64, waiter: Waiter)] = []

    /// The newest commit that is not on disk yet; nil when every commit is.
    var unsyncedCommit: UInt64? { durableThrough >= lastDeferred ? nil : lastDeferred }

    var waiterCount: Int { waiters.count }

    func isDurable(_ ticket: UInt64) -> Bool { ticket <= durableThrough }

    /// A commit made without its own sync: its ticket.
    mutating func committedDeferred() -> UInt64 {
        lastDeferred += 1
        return lastDeferred
    }

    /// A commit SQLite synced itself (synchronous=FULL): every earlier frame of the WAL is
    /// on disk with it.
    mutating func committedDurably() {
        durableThrough = lastDeferred
    }

    /// An fdatasync of the WAL, begun after commit `ticket`, has returned.
    mutating func synced(through ticket: UInt64) {
        durableThrough = max(durableThrough, min(ticket, lastDeferred))
    }

    /// Registers `waiter` for `ticket`; returns it back when the ticket is durable already
    /// (the caller runs it now).
    mutating func wait(through ticket: UInt64, _ waiter: Waiter) -> Waiter? {
        if isDurable(ticket) { return waiter }
        waiters.append((ticket, waiter))
        return nil
    }

    /// Removes and returns the waiters whose tickets are durable, in registration order.
    mutating func takeReady() -> [Waiter] {
        guard !waiters.isEmpty else { return [] }
        var ready: [Waiter] = []
        var rest: [(through: UInt64, waiter: Waiter)] = []
        for w in waiters {
            if isDurable(w.through) { ready.append(w.waiter) } else { rest.append(w) }
        }
        waiters = rest
        return ready
    }
}
