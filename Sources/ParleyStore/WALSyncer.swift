import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The thread of group commit: makes every commit made so far durable with ONE fdatasync
/// of the WAL file, while the event loop goes on parsing, storing and sending. Requests
/// that arrive during a sync are covered together by the next one, so under load one
/// fsync serves every commit of the previous fsync's duration (`Store.startGroupCommit`).
///
/// It only syncs a file; it never touches SQLite's connection (which stays on the event
/// loop). Syncing the WAL while SQLite appends to it is safe: the kernel writes back the
/// pages dirty when the call began (and maybe more); a ticket is reported durable only
/// for commits that returned before the sync began.
final class WALSyncer: @unchecked Sendable {
    typealias Sync = @Sendable () throws -> Void

    private let condition = NSCondition()
    /// Guarded by `condition`: the newest ticket asked for.
    private var requested: UInt64 = 0
    /// Guarded by `condition`.
    private var stopping = false
    /// Guarded by `condition`: the thread has returned.
    private var exited = false
    private let sync: Sync
    private let completed: @Sendable (Result<UInt64, Error>) -> Void

    /// `completed` is called on the syncer's thread after each sync (or once with the
    /// failure, after which the syncer stops: what the disk holds is then unknown, and
    /// nothing after it may be reported durable).
    init(sync: @escaping Sync, completed: @escaping @Sendable (Result<UInt64, Error>) -> Void) {
        self.sync = sync
        self.completed = completed
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "parley-wal-sync"
        thread.start()
    }

    /// Asks for every commit up to `ticket` (already returned) to be made durable.
    func request(through ticket: UInt64) {
        condition.lock()
        let wake = ticket > requested
        if wake { requested = ticket }
        condition.unlock()
        // Signalled after the unlock: signalled under it, the woken thread (which often
        // preempts the caller on a busy CPU) found the lock still held and slept again until
        // the caller released it, two more context switches before the sync could begin.
        // A wake-up without the lock is not lost: the thread re-checks `requested` under the
        // lock before it waits, and `requested` only grows.
        if wake { condition.signal() }
    }

    /// The newest ticket asked for so far (what tests look at).
    var requestedThrough: UInt64 {
        condition.lock()
        defer { condition.unlock() }
        return requested
    }

    /// Stops the thread after the sync in progress, if any; returns once it has.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !exited { condition.wait() }
        condition.unlock()
    }

    private func run() {
        var synced: UInt64 = 0
        condition.lock()
        defer {
            exited = true
            condition.broadcast()
            condition.unlock()
        }
        while true {
            while requested <= synced && !stopping { condition.wait() }
            if stopping { return }
            let target = requested
            condition.unlock()
            let result: Result<UInt64, Error>
            do {
                try sync()
                synced = target
                result = .success(target)
            } catch {
                result = .failure(error)
            }
            completed(result)
            condition.lock()
            if case .failure = result { return }
        }
    }

    /// fdatasync of the file at `path` through a descriptor of its own (a sync covers the
    /// file, whichever descriptor wrote it). A file that is gone has nothing to sync: SQLite
    /// removes the WAL only after checkpointing it into the database file and syncing that.
    static func fdatasyncFile(_ path: String) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT { return }
            throw StoreError.io(path: path, reason: "cannot open to sync: \(String(cString: strerror(code)))")
        }
        defer { _ = close(fd) }
        while fdatasync(fd) != 0 {
            let code = errno
            if code == EINTR { continue }
            throw StoreError.io(path: path, reason: "fdatasync failed: \(String(cString: strerror(code)))")
        }
    }
}
