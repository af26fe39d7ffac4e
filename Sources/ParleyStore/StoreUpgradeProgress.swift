import GRDB
import GRDBSQLite
import Synchronization

/// What opening a store reports while it upgrades the schema: which migration runs, and a
/// count that moves while SQLite is working on it. Written by the thread that opens the
/// store (`Store.init`), read by any other (the daemon's start-timeout keeper, which tells
/// systemd the start-up is making progress: docs/ARCHITECTURE.md "Start-up").
///
/// The count is SQLite's own: a progress handler (`sqlite3_progress_handler`) installed for
/// the migrations only, called every `instructionsPerMark` virtual-machine instructions. It
/// moves whenever a migration's statements execute, whatever the migration is, without
/// touching the migrations' SQL; it stands still while SQLite waits (for the disk, for a
/// lock) and while nothing runs at all. A migration that loops forever inside SQLite keeps
/// it moving: the keeper bounds the whole start-up for that case
/// (`StartTimeoutExtension.Limits.maxStartup`).
public final class StoreUpgradeProgress: Sendable {
    /// One mark per this many SQLite VM instructions: ~1 ms of a migration's work, so the
    /// count moves hundreds of times between two looks of the keeper (seconds apart), and
    /// the callback (a lock and an add) costs nothing measurable next to the work.
    public static let instructionsPerMark: Int32 = 100_000

    /// The migration running now.
    public struct Migration: Equatable, Sendable {
        /// Its identifier in `Schema.migrator` (e.g. "lean-messages-v1").
        public let name: String
        /// 1-based position among the migrations this open runs, and how many it runs.
        public let index: Int
        public let count: Int
        /// Progress marks since the store began upgrading (never reset between migrations).
        public let marks: UInt64
    }

    private struct State {
        var name: String?
        var index = 0
        var count = 0
        var marks: UInt64 = 0
        var finished = 0
    }

    private let state = Mutex(State())

    public init() {}

    /// The migration running now, or nil when none is (before, between opens, after).
    public var current: Migration? {
        state.withLock { s in
            s.name.map { Migration(name: $0, index: s.index, count: s.count, marks: s.marks) }
        }
    }

    /// Progress marks so far (they move only while a migration runs).
    public var marks: UInt64 { state.withLock { $0.marks } }

    /// How many migrations opening the store has completed.
    public var completedMigrations: Int { state.withLock { $0.finished } }

    func begin(_ name: String, index: Int, count: Int) {
        state.withLock { s in
            s.name = name
            s.index = index
            s.count = count
        }
    }

    /// `migrations`: how many the step that ended ran (more than one only for the all-at-once
    /// upgrade of a store whose migrations were applied out of order).
    func end(completed: Bool, migrations: Int = 1) {
        state.withLock { s in
            if completed { s.finished += migrations }
            s.name = nil
        }
    }

    func mark() { state.withLock { $0.marks &+= 1 } }

    /// Runs `migrator`'s pending migrations one at a time (each is still its own
    /// transaction, as `migrate(_:)` runs them), reporting each and SQLite's progress.
    static func migrate(
        _ database: DatabaseQueue, with migrator: DatabaseMigrator, reporting progress: StoreUpgradeProgress
    ) throws {
        let applied = try database.read { db in try migrator.appliedIdentifiers(db) }
        let pending = migrator.migrations.filter { !applied.contains($0) }
        // A new store is created, not upgraded: milliseconds, nothing to report.
        guard !applied.isEmpty else { return try migrator.migrate(database) }
        guard !pending.isEmpty else { return }
        let context = Unmanaged.passUnretained(progress).toOpaque()
        try database.writeWithoutTransaction { db in
            sqlite3_progress_handler(db.sqliteConnection, instructionsPerMark, progressMark, context)
        }
        // Off again whatever happens: the hot statements must not pay for a callback, and
        // `context` is only borrowed for this call.
        defer {
            try? database.writeWithoutTransaction { db in
                sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil)
            }
        }
        // GRDB's `migrate(_:upTo:)` stops the process (`fatalError`) for a target registered
        // before a migration already applied: a store made by a build whose migrations were
        // registered in another order (two branches that each added one). Then all of them
        // at once, as `migrate(_:)` runs them, reported as one step.
        let lastApplied = migrator.migrations.lastIndex { applied.contains($0) }
        let firstPending = migrator.migrations.firstIndex { !applied.contains($0) }
        if let lastApplied, let firstPending, firstPending < lastApplied {
            progress.begin(pending.joined(separator: ", "), index: 1, count: 1)
            do { try migrator.migrate(database) } catch {
                progress.end(completed: false)
                throw error
            }
            progress.end(completed: true, migrations: pending.count)
            return
        }
        for (offset, name) in pending.enumerated() {
            progress.begin(name, index: offset + 1, count: pending.count)
            do { try migrator.migrate(database, upTo: name) } catch {
                progress.end(completed: false)
                throw error
            }
            progress.end(completed: true)
        }
    }
}

/// SQLite's progress callback: one mark; 0 lets the statement go on.
private func progressMark(_ context: UnsafeMutableRawPointer?) -> Int32 {
    guard let context else { return 0 }
    Unmanaged<StoreUpgradeProgress>.fromOpaque(context).takeUnretainedValue().mark()
    return 0
}
