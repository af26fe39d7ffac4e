import GRDB
import ParleyCore

/// Group commit (issue 32): with `Durability.full`, the message path's transactions
/// (`enqueue`, `storeIncoming`) commit without waiting for the disk, and `WALSyncer` makes
/// them durable with one fdatasync of the WAL for all the commits made meanwhile, off the
/// event loop. What a commit promises — a client's `messages.send` answer, a peer's ack, a
/// client seeing the message — is held until its sync (`whenDurable`): the daemon's
/// control-socket writer holds every line written after an unsynced commit, the outbox holds
/// the ack.
///
/// What a crash can lose: a crash of parleyd (SIGKILL) loses nothing committed — the WAL's
/// pages are in the kernel's cache. A power cut can lose commits not yet synced, and only
/// those: nothing was answered or acknowledged for them. A message sent to the peer before
/// its own sync may then survive at the peer but not at the sender (its client got no answer).
/// Every other write keeps its own sync (synchronous=FULL), which also covers every
/// deferred commit before it.
extension Store {
    /// Starts group commit. `hop` runs a closure on the thread that uses the store (the
    /// daemon's event loop): waiters run there. `failed` is called there if a sync fails; the
    /// store then never reports a later commit durable (what the disk holds is unknown), and
    /// the daemon should stop. With `Durability.normal` there is nothing to sync: no-op.
    public func startGroupCommit(
        hop: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        failed: @escaping @Sendable (StoreError) -> Void
    ) throws(StoreError) {
        let walPath = path + "-wal"
        try startGroupCommit(sync: { try WALSyncer.fdatasyncFile(walPath) }, hop: hop, failed: failed)
    }

    /// `startGroupCommit` with the sync itself given (tests hold it, or fail it).
    func startGroupCommit(
        sync: @escaping WALSyncer.Sync,
        hop: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        failed: @escaping @Sendable (StoreError) -> Void
    ) throws(StoreError) {
        guard durability == .full else { return }
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { throw .closed(path: path) }
        guard walSyncer == nil else { return }
        do {
            try database.writeWithoutTransaction { db in
                try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").executeDirect([])
            }
        } catch {
            throw StoreError.translating(error, path: path)
        }
        let walPath = path + "-wal"
        let syncer = WALSyncer(
            sync: sync,
            completed: { [weak self] result in
                guard let self else { return }
                hop {
                    switch result {
                    case .success(let ticket): self.synced(through: ticket)
                    case .failure(let error): failed(StoreError.translating(error, path: walPath))
                    }
                }
            })
        groupCommitHop = hop
        walSyncer = syncer
        syncer.start()
    }

    /// Runs `body`; the sync its deferred commits need is asked of `WALSyncer` when it
    /// returns (or throws), not at each commit. A sender wraps its commit and the writes of
    /// the records it stored: its own sync is not on the message's way to the peer, and
    /// where the daemon shares its CPU the syncer's thread (woken by the request, then the
    /// kernel's work for its fdatasync) ran before the record left (row 3 traced on a busy
    /// machine: 326 → 157 µs from the request's read to the record's write, with
    /// `WALSyncer.request`'s signal out of its lock; docs/BENCHMARKS.md, part 12). Nothing
    /// waits longer for it than `body` takes: what the commit promises (the client's
    /// answer) is held for this sync either way. Scopes nest; the outermost asks.
    public func holdingSyncRequests<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        lock.lock()
        groupCommit.holdSyncRequests()
        lock.unlock()
        defer {
            lock.lock()
            let ticket = groupCommit.lastDeferred
            let syncer = groupCommit.endHoldAsksForSync() && !groupCommit.isDurable(ticket) ? walSyncer : nil
            lock.unlock()
            syncer?.request(through: ticket)
        }
        return try body()
    }

    /// The newest commit of the message path not yet on disk; nil when all are (always nil
    /// without group commit).
    public var unsyncedCommit: UInt64? {
        lock.lock()
        defer { lock.unlock() }
        return groupCommit.unsyncedCommit
    }

    /// Whether commit `ticket` (from `unsyncedCommit`) is on disk.
    public func isDurable(_ ticket: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return groupCommit.isDurable(ticket)
    }

    /// Runs `action` once commit `ticket` (default: the newest commit so far) is on disk:
    /// now, on the caller's thread, if it already is; else later on the store's thread
    /// (`startGroupCommit`'s `hop`). `last`: after every action the same sync releases that
    /// was registered without it (a receiver's ack after its client's notification).
    public func whenDurable(through ticket: UInt64? = nil, last: Bool = false, _ action: @escaping () -> Void) {
        lock.lock()
        let ticket = ticket ?? groupCommit.lastDeferred
        let now = groupCommit.wait(through: ticket, last: last, action)
        lock.unlock()
        now?()
    }

    /// The newest commit the syncer was asked to sync (0: none; what tests look at).
    var syncRequestedThrough: UInt64 {
        lock.lock()
        let syncer = walSyncer
        lock.unlock()
        return syncer?.requestedThrough ?? 0
    }

    /// Actions waiting for a sync (what tests look at).
    var durableWaiterCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return groupCommit.waiterCount
    }

    /// On the store's thread: the syncer has made everything through `ticket` durable.
    func synced(through ticket: UInt64) {
        lock.lock()
        groupCommit.synced(through: ticket)
        let ready = groupCommit.takeReady()
        lock.unlock()
        for action in ready { action() }
    }

    /// On the store's thread: runs whatever a synchronous commit made durable.
    func runDurableWaiters() {
        lock.lock()
        let ready = groupCommit.takeReady()
        lock.unlock()
        for action in ready { action() }
    }
}
