import CSQLiteConfig
import Foundation
import GRDB
import ParleyCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The node's durable state in one SQLite file: messages (outbox and inbox), peers, pending
/// key changes, counters and settings.
///
/// The daemon calls it synchronously from one event-loop thread. Every method is one
/// transaction on a serialised `DatabaseQueue`; the only mutable state, whether the store
/// was closed, is guarded by `lock`. That is what makes `@unchecked Sendable` honest.
///
/// The connection holds SQLite's lock exclusively for its whole life (`locking_mode =
/// EXCLUSIVE`): a second parleyd on the same state directory fails at open with
/// `StoreError.locked` instead of silently sharing the outbox, and WAL needs no shared-memory
/// index. The price: no other process can read the file while the daemon runs.
public final class Store: @unchecked Sendable {
    /// The database file's name inside the state directory.
    public static let fileName = "parley.sqlite"
    /// How long opening waits for another connection's lock before failing with `.locked`:
    /// long enough for a previous parleyd that is exiting to let go, short enough that a
    /// second daemon started by mistake reports the problem promptly.
    static let openBusyTimeout: TimeInterval = 1
    /// SQLite page cache per connection. Message ids are random, so the id index is probed
    /// at random on every insert and ack; with SQLite's default 2 MiB, once the history
    /// outgrows it nearly every probe becomes a read syscall.
    static let pageCacheKiB = 16 * 1024
    /// New database files are readable by the owner only: they hold message history.
    static let fileMode: mode_t = 0o600
    /// Page size of a NEW database file (an existing file keeps the size it was made with;
    /// changing it would take a VACUUM out of WAL mode). Every commit writes each page it
    /// dirtied to the WAL with a checksum over the whole page, ~1.1 instructions per byte:
    /// one message alone in its transaction dirties 5–9 pages (its row, its body, the
    /// indexes, counters, the journal), so at 4 KiB the checksums alone were ~90,000
    /// instructions per message one in flight on the two daemons (issue 32 part 7). 2 KiB,
    /// not 1: smaller pages split more often under batches (row 4i: +2,300 instructions a
    /// message at 2 KiB, +6,200 at 1 KiB, for −48,000 and −62,000 one in flight), and
    /// FTS5's 4,050-byte leaves and 64 KiB bodies span fewer overflow pages.
    static let newFilePageSize = 2048

    /// Absolute or relative path of the database file, as opened.
    public var path: String { database.path }
    public let durability: Durability
    let database: DatabaseQueue
    /// Where the reads tell of the damaged rows they left out (`UnreadableRow`); the daemon
    /// logs each once.
    public let unreadableRows = UnreadableRowLog()
    /// Held for every database access and for `close()`: GRDB touches a closed connection's
    /// freed handle (a crash), so use after close must be refused before reaching it.
    let lock = NSLock()
    /// Guarded by `lock`.
    private(set) var isClosed = false
    /// Guarded by `lock` (written inside write transactions, which hold it). See
    /// `roomOutboxesMayHaveWork` in Store+Rooms.swift.
    var roomOutboxesKnownEmpty = false
    /// Guarded by `lock`: how far the search index is fed (a mirror of the
    /// `search_indexed_through` counter, moved only after the commit that moved the counter).
    var searchFeed = SearchIndexFeed(indexedThrough: 0)
    /// Party ids (`Store+Parties`) by hex key, as committed lookups found them; under `lock`.
    /// Cleared when a write fails (its transaction, and any party it added, rolled back).
    var partyIDs: [PartyKey: Int64] = [:]
    /// Guarded by `lock`: write transactions committed since open. What the message path's
    /// tests count (one per side per batch of messages, the journal's rows included).
    private var committedWrites = 0
    /// Guarded by `lock`: group commit (Store+GroupCommit.swift); nil until it is started.
    var walSyncer: WALSyncer?
    /// Guarded by `lock`: which deferred commits are on disk and what waits for them.
    var groupCommit = GroupCommitLedger<() -> Void>()
    /// Runs a closure on the store's thread (group commit's waiters run there).
    var groupCommitHop: (@Sendable (@escaping @Sendable () -> Void) -> Void)?
    /// Guarded by `lock`: the statements every write transaction runs, prepared at the first
    /// write and released before the connection closes (`TransactionStatements`).
    var transactionStatements: TransactionStatements?
    /// Guarded by `lock`: the counters' pending deltas and remembered values
    /// (`CounterLedger`), written once per transaction by `inTransaction`.
    var counterLedger = CounterLedger()
    /// Guarded by `lock`: delivery marks waiting for the message path's next transaction
    /// (`DeliveryMarkQueue`, Store+DeliveryMarks.swift).
    var deliveryMarks = DeliveryMarkQueue()

    /// SQLite's memory statistics turned off, once per process, before the first store opens
    /// a connection (`parley_sqlite_disable_memory_statistics` in CSQLiteConfig: each SQLite
    /// allocation otherwise takes a global mutex to count itself). True if it took effect;
    /// false if SQLite was already initialized (something opened a database first), which
    /// costs only speed.
    static let sqliteMemoryStatisticsOff = parley_sqlite_disable_memory_statistics() == SQLITE_OK

    /// Opens (creating if absent) `parley.sqlite` in `directory`, which must already exist.
    /// A file that is not a Parley database, is damaged, or is locked by another process is
    /// an error naming the file; it is never replaced by a fresh database.
    ///
    /// Opening an older store upgrades its schema first; on a big store that can take
    /// minutes. `upgradeProgress`, when given, reports which migration runs and that SQLite
    /// is working on it, for whoever must tell someone (the daemon tells systemd).
    public init(
        directory: String, durability: Durability = .full, upgradeProgress: StoreUpgradeProgress? = nil
    ) throws(StoreError) {
        let path = directory.hasSuffix("/") ? directory + Self.fileName : directory + "/" + Self.fileName
        self.durability = durability

        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw .io(path: path, reason: "state directory \(directory) does not exist or is not a directory")
        }
        try Self.createPrivateFileIfMissing(path)

        _ = Self.sqliteMemoryStatisticsOff
        var configuration = Configuration()
        configuration.label = "parley.store"
        configuration.foreignKeysEnabled = true
        configuration.busyMode = .timeout(Self.openBusyTimeout)
        // GRDB's own WAL setup would force synchronous = NORMAL; prepareDatabase does it.
        configuration.journalMode = .default
        configuration.prepareDatabase { db in
            // Must precede the first WAL access so SQLite keeps the WAL index in heap memory.
            try db.execute(sql: "PRAGMA locking_mode = EXCLUSIVE")
            // Takes effect only on a file with no pages yet (and before WAL is on).
            try db.execute(sql: "PRAGMA page_size = \(Store.newFilePageSize)")
            let journalMode = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
            guard journalMode == "wal" else {
                throw StoreError.io(
                    path: path, reason: "could not enable WAL (journal mode is \(journalMode ?? "unknown"))")
            }
            try db.execute(sql: "PRAGMA synchronous = \(durability.synchronousPragma)")
            // Negative cache_size means KiB.
            try db.execute(sql: "PRAGMA cache_size = -\(Store.pageCacheKiB)")
            Schema.registerSearchFunction(db)
            Schema.registerUnhexFunction(db)
        }

        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            let migrator = Schema.migrator
            try database.writeWithoutTransaction { db in
                // A write transaction at open takes the exclusive lock now, not at the first
                // message: a second daemon fails here rather than later.
                try db.execute(sql: "BEGIN EXCLUSIVE; COMMIT")
                try Self.requireParleyDatabase(db, path: path)
                if try migrator.hasBeenSuperseded(db) {
                    throw StoreError.unsupportedSchema(
                        path: path, reason: "it was migrated by a newer version of Parley")
                }
            }
            if let upgradeProgress {
                try StoreUpgradeProgress.migrate(database, with: migrator, reporting: upgradeProgress)
            } else {
                try migrator.migrate(database)
            }
        } catch {
            throw StoreError.translating(error, path: path)
        }
        // Bodies a crash left unindexed (at most `SearchIndexFeed.maxBacklogRows`) are
        // indexed now, before anything can search.
        try catchUpSearchIndex()
    }

    /// Closes the connection, checkpointing the WAL into the main file. Optional: dropping
    /// the store closes it too, and a crash loses nothing that was committed.
    /// Later calls throw `.closed`; closing twice is harmless.
    public func close() throws(StoreError) {
        // The syncer first, outside the lock (its last completion may hop back here); what
        // it did not sync, closing does (SQLite checkpoints the WAL and syncs the file).
        lock.lock()
        let syncer = walSyncer
        walSyncer = nil
        lock.unlock()
        syncer?.stop()
        // Marks still queued are written (the daemon's node flushes them before; this is
        // for any other owner of the store): a clean stop loses no delivery.
        try? flushDeliveryMarks(journal: deliveryMarkJournal)
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return }
        // Held statements would keep the connection open past close (SQLite's close_v2).
        transactionStatements = nil
        counterLedger.rolledBack()
        do { try database.close() } catch { throw StoreError.translating(error, path: path) }
        isClosed = true
    }

    /// SQLite's journal mode as the connection reports it ("wal" once open).
    public func journalMode() throws(StoreError) -> String {
        try read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") ?? "" }
    }

    /// Reads every page and index (`PRAGMA quick_check`); throws `.corrupt` if anything is
    /// damaged. Costs a full scan, so it is for an explicit check, not every start.
    public func checkIntegrity() throws(StoreError) {
        let problems = try read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
        guard problems == ["ok"] else {
            throw .corrupt(path: path, reason: problems.prefix(3).joined(separator: "; "))
        }
    }

    // MARK: - Transactions

    /// Runs `body` in one write transaction; any error rolls the whole of it back. The
    /// search index is fed at its end when its backlog is due (`SearchIndexFeed`), in the
    /// same transaction, so the index and its mark commit with the bodies.
    func write<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        try write(feeding: .writeCommitting, body)
    }

    /// `write`, feeding the search index on `occasion`. `deferringSync`: with group commit
    /// running, commit without waiting for the disk and leave the sync to `WALSyncer`; the
    /// caller holds whatever promises durability behind `whenDurable`
    /// (Store+GroupCommit.swift). Otherwise the commit is synced before this returns.
    func write<T>(
        feeding occasion: SearchIndexFeed.Occasion, deferringSync: Bool = false, _ body: (Database) throws -> T
    ) throws(StoreError) -> T {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { throw .closed(path: path) }
        let syncer = walSyncer
        // With group commit the connection runs synchronous=NORMAL; a commit that must be
        // synced itself turns FULL back on around its transaction.
        let syncsItself = syncer != nil && !deferringSync
        do {
            var fedThrough: Int64?
            let result = try database.writeWithoutTransaction { db in
                if syncsItself { try db.cachedStatement(sql: "PRAGMA synchronous = FULL").executeDirect([]) }
                defer {
                    if syncsItself { try? db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").executeDirect([]) }
                }
                return try inTransaction(db) { db in
                    let result = try body(db)
                    fedThrough = try feedSearchIndex(db, occasion)
                    return result
                }
            }
            if let fedThrough { searchFeed.fed(through: fedThrough) }
            committedWrites += 1
            if let syncer {
                if deferringSync {
                    let ticket = groupCommit.committedDeferred()
                    if groupCommit.asksForSyncNow() { syncer.request(through: ticket) }
                } else {
                    groupCommit.committedDurably()
                    if groupCommit.waiterCount > 0, let hop = groupCommitHop {
                        hop { [weak self] in self?.runDurableWaiters() }
                    }
                }
            }
            return result
        } catch {
            partyIDs.removeAll()
            throw StoreError.translating(error, path: path)
        }
    }

    /// Indexes every body not yet in the search index (called before a search and at open).
    func catchUpSearchIndex() throws(StoreError) {
        try write(feeding: .catchUp) { _ in }
    }

    /// Indexes the bodies above the mark with ONE statement (one FTS5 segment) if
    /// `occasion` makes it due, and moves the stored mark; returns the new mark, which the
    /// caller adopts once the transaction commits. Inside a write transaction, under `lock`.
    private func feedSearchIndex(_ db: Database, _ occasion: SearchIndexFeed.Occasion) throws -> Int64? {
        if occasion == .catchUp {
            // At open the mirror is not loaded yet; reading it here keeps it exact.
            let mark = try Int64.fetchOne(
                db.cachedStatement(
                    sql: "SELECT value FROM counter WHERE name = '\(Schema.Counter.searchIndexedThrough)'"))
            searchFeed = SearchIndexFeed(indexedThrough: mark ?? 0)
        }
        // Every write asks; through the C API (GRDB's generic fetch cost ~15,000 instructions).
        var newest: Int64 = 0  // MAX of no rows is NULL, read as 0
        try transactionStatements(db).newestBody.queryDirect([]) { row in newest = row.int64(0) }
        guard let rows = searchFeed.rowsToIndex(newestBodyRow: newest, occasion: occasion) else { return nil }
        let mark = try db.cachedStatement(
            sql: "UPDATE counter SET value = ? WHERE name = '\(Schema.Counter.searchIndexedThrough)'")
        try mark.execute(arguments: [rows.upperBound])
        let index = try db.cachedStatement(
            sql: """
                INSERT INTO message_search (rowid, body)
                SELECT row_id, \(Schema.searchTextFunction)(body) FROM message_body WHERE row_id BETWEEN ? AND ?
                """)
        try index.execute(arguments: [rows.lowerBound, rows.upperBound])
        return rows.upperBound
    }

    /// One transaction around `body`: committed if it returns, rolled back if it throws.
    /// Not GRDB's `inTransaction`: that executes `BEGIN` and `COMMIT` from SQL text each
    /// time, and SQLite compiles a statement from text on every call (two compilations per
    /// transaction, 14 per message on the sender in callgrind: 14 % of its instructions).
    /// `BEGIN` and `COMMIT` are prepared once (`TransactionStatements`) and stepped through
    /// the C API, like the per-message statements: GRDB's `execute()` (argument checks,
    /// its statement hooks) and its statement cache's lookup by SQL text cost ~6,000
    /// instructions per transaction, a lone message's transaction being the common case one
    /// in flight (issue 32 part 7). SQLite's own commit hook, which GRDB installs, still runs.
    private func inTransaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        let statements = try transactionStatements(db)
        try statements.begin.executeDirect([])
        counterLedger.begin()
        do {
            let result = try body(db)
            // The counters the body moved, all in one statement (`CounterLedger`).
            if counterLedger.hasPendingChanges {
                try statements.counterFlush.executeDirect(counterLedger.flushArguments)
            }
            try statements.commit.executeDirect([])
            counterLedger.committed()
            deliveryMarks.committed()
            return result
        } catch {
            counterLedger.rolledBack()
            deliveryMarks.rolledBack()
            // SQLite may already have rolled back by itself (a full disk, an I/O error).
            if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK TRANSACTION").execute() }
            throw error
        }
    }

    /// A write whose loss in a power cut is harmless because it is re-derived: delivery
    /// and read marks (the peer re-acknowledges a resent message), presence times, the
    /// event journal. With `Durability.full` it commits without its own fsync (WAL with
    /// synchronous=NORMAL: safe against a crash of parleyd, made durable by the next full
    /// commit), so bookkeeping does not cost the message path an fsync each.
    func relaxedWrite<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        guard durability == .full else { return try write(body) }
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { throw .closed(path: path) }
        do {
            // With group commit the connection is at synchronous=NORMAL already.
            if walSyncer != nil {
                let result = try database.writeWithoutTransaction { db in try inTransaction(db, body) }
                committedWrites += 1
                return result
            }
            let result = try database.writeWithoutTransaction { db in
                // Stepped through the C API: GRDB's execute() cost ~10,000 instructions each.
                try db.cachedStatement(sql: "PRAGMA synchronous = NORMAL").executeDirect([])
                defer {
                    try? db.cachedStatement(sql: "PRAGMA synchronous = \(durability.synchronousPragma)").executeDirect(
                        [])
                }
                return try inTransaction(db, body)
            }
            committedWrites += 1
            return result
        } catch {
            partyIDs.removeAll()
            throw StoreError.translating(error, path: path)
        }
    }

    /// The statements of every write transaction, prepared once; under `lock`.
    func transactionStatements(_ db: Database) throws -> TransactionStatements {
        if let statements = transactionStatements { return statements }
        let statements = TransactionStatements(
            begin: try db.makeStatement(sql: "BEGIN IMMEDIATE TRANSACTION"),
            commit: try db.makeStatement(sql: "COMMIT TRANSACTION"),
            newestBody: try db.makeStatement(sql: "SELECT MAX(row_id) FROM message_body"),
            counterFlush: try db.makeStatement(sql: CounterLedger.flushStatementSQL),
            counterRead: try db.makeStatement(sql: CounterLedger.readStatementSQL),
            shapes: HeldShapes())
        try statements.shapes.prepareAll(db)
        transactionStatements = statements
        return statements
    }

    /// Write transactions committed since the store was opened.
    public var committedWriteTransactions: Int {
        lock.lock()
        defer { lock.unlock() }
        return committedWrites
    }

    /// Runs `body`, which only reads. Not `DatabaseQueue.read`: that brackets every read
    /// with `PRAGMA query_only = 1/0`, and a flag pragma expires every prepared statement,
    /// so each read made SQLite re-compile all cached statements (10 % of the daemon's CPU
    /// per message in the benchmark's profile). The one connection holds the database
    /// exclusively, so no other writer can interleave with a multi-statement read.
    func read<T>(_ body: (Database) throws -> T) throws(StoreError) -> T {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { throw .closed(path: path) }
        do { return try database.inDatabase(body) } catch { throw StoreError.translating(error, path: path) }
    }

    // MARK: - Opening

    /// Creates an empty file with owner-only permissions so SQLite (and its -wal file, which
    /// copies the main file's mode) never exists world-readable, even briefly.
    private static func createPrivateFileIfMissing(_ path: String) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, fileMode)
        if descriptor >= 0 {
            closeDescriptor(descriptor)
            return
        }
        let code = errno
        guard code == EEXIST else {
            throw .io(path: path, reason: String(cString: strerror(code)))
        }
    }

    private static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Darwin.close(descriptor)
        #endif
    }

    /// Refuses a SQLite file that belongs to some other program: migrating it would turn
    /// someone else's data into a half-Parley database.
    private static func requireParleyDatabase(_ db: Database, path: String) throws {
        let applicationID = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
        if applicationID == Schema.applicationID { return }
        if applicationID != 0 {
            throw StoreError.corrupt(
                path: path, reason: "application_id is \(applicationID), not Parley's \(Schema.applicationID)")
        }
        let objectCount = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sqlite_master") ?? 0
        if objectCount != 0 {
            throw StoreError.corrupt(path: path, reason: "SQLite file with foreign tables and no Parley application id")
        }
    }
}

/// `BEGIN IMMEDIATE`, `COMMIT` and the search feed's probe, which every write transaction
/// runs: held by the store rather than looked up in GRDB's statement cache by their SQL
/// text (a hash of the text per lookup) at every transaction.
struct TransactionStatements {
    let begin: Statement
    let commit: Statement
    let newestBody: Statement
    /// `CounterLedger.flushStatementSQL`: the transaction's counter deltas.
    let counterFlush: Statement
    /// `CounterLedger.readStatementSQL`: the counters' stored values.
    let counterRead: Statement
    /// The message path's multi-row INSERTs, one statement per chunk size (`HeldShapes`).
    let shapes: HeldShapes
}
