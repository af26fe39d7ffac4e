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
    /// The same, run after every waiter of `waiters` that is ready at the same time
    /// (`wait(through:last:)`).
    private var lastWaiters: [(through: UInt64, waiter: Waiter)] = []

    /// Depth of `Store.holdingSyncRequests`: while above 0, a deferred commit's sync is
    /// asked for at the end of the outermost hold, not at the commit.
    private var syncRequestHolds = 0
    /// A deferred commit made during the hold has not asked for its sync yet.
    private var syncRequestHeld = false

    /// The newest commit that is not on disk yet; nil when every commit is.
    var unsyncedCommit: UInt64? { durableThrough >= lastDeferred ? nil : lastDeferred }

    var waiterCount: Int { waiters.count + lastWaiters.count }

    func isDurable(_ ticket: UInt64) -> Bool { ticket <= durableThrough }

    /// A commit made without its own sync: its ticket.
    mutating func committedDeferred() -> UInt64 {
        lastDeferred += 1
        return lastDeferred
    }

    /// After `committedDeferred`: whether its sync is to be asked for now (false: inside a
    /// hold, which asks at its end).
    mutating func asksForSyncNow() -> Bool {
        if syncRequestHolds > 0 {
            syncRequestHeld = true
            return false
        }
        return true
    }

    mutating func holdSyncRequests() { syncRequestHolds += 1 }

    /// Ends a hold: true when it was the outermost and a commit made during it still has to
    /// ask for its sync (the caller asks, through `lastDeferred`).
    mutating func endHoldAsksForSync() -> Bool {
        syncRequestHolds -= 1
        guard syncRequestHolds == 0, syncRequestHeld else { return false }
        syncRequestHeld = false
        return true
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
    /// (the caller runs it now). `last`: among the waiters one sync releases, it runs after
    /// every one registered without `last`, whenever it was registered.
    mutating func wait(through ticket: UInt64, last: Bool = false, _ waiter: Waiter) -> Waiter? {
        if isDurable(ticket) { return waiter }
        if last { lastWaiters.append((ticket, waiter)) } else { waiters.append((ticket, waiter)) }
        return nil
    }

    /// Removes and returns the waiters whose tickets are durable: those registered without
    /// `last` in registration order, then those with it, in registration order.
    mutating func takeReady() -> [Waiter] {
        guard !waiters.isEmpty || !lastWaiters.isEmpty else { return [] }
        var ready: [Waiter] = []
        Self.take(from: &waiters, durableThrough: durableThrough, into: &ready)
        Self.take(from: &lastWaiters, durableThrough: durableThrough, into: &ready)
        return ready
    }

    private static func take(
        from list: inout [(through: UInt64, waiter: Waiter)], durableThrough: UInt64, into ready: inout [Waiter]
    ) {
        guard !list.isEmpty else { return }
        var rest: [(through: UInt64, waiter: Waiter)] = []
        for w in list {
            if w.through <= durableThrough { ready.append(w.waiter) } else { rest.append(w) }
        }
        list = rest
    }
}
