import Foundation
import GRDB
import XCTest

@testable import ParleyStore

/// Opening an older store reports its upgrade (`StoreUpgradeProgress`): which migration
/// runs, and a count SQLite moves while it works, read from another thread as the daemon's
/// start-timeout keeper does. The count stops when the upgrade is done: the hot statements
/// pay for no progress callback.
final class StoreUpgradeProgressTests: StoreDirectoryTestCase {
    func testAnUpgradeReportsEachMigrationAndSQLitesProgressWhileItRuns() throws {
        let me = String(format: "%064x", 99)
        try PreLeanStoreFixture.write(
            path: directory + "/" + Store.fileName, messages: 30_000, me: me, room: String(format: "%032x", 5))
        let progress = StoreUpgradeProgress()
        let opened = Date()

        // A watcher on its own thread, as the keeper is: what it saw while the store opened.
        final class Seen: @unchecked Sendable {
            let lock = NSLock()
            var migrations: [StoreUpgradeProgress.Migration] = []
            var done = false
        }
        let seen = Seen()
        let watcher = Thread {
            // Bounded: stops when the open is done, or after a minute at most.
            for _ in 0..<60_000 {
                if let m = progress.current {
                    seen.lock.withLock { if seen.migrations.last != m { seen.migrations.append(m) } }
                }
                if seen.lock.withLock({ seen.done }) { return }
                usleep(1_000)
            }
        }
        watcher.start()
        let store = try Store(directory: directory, upgradeProgress: progress)
        seen.lock.withLock { seen.done = true }
        print("StoreUpgradeProgressTests: 30,000 messages upgraded in \(Date().timeIntervalSince(opened)) s")

        let migrations = seen.lock.withLock { seen.migrations }
        // lean-messages-v1 is the long one; message-counters-one-row-v1 after it takes no time
        // and may come and go between two looks.
        let lean = migrations.filter { $0.name == Schema.leanMessagesMigration }
        XCTAssertFalse(lean.isEmpty, "\(migrations)")
        XCTAssertTrue(
            Set(migrations.map(\.name)).isSubset(of: [Schema.leanMessagesMigration, "message-counters-one-row-v1"]),
            "\(migrations)")
        XCTAssertTrue(lean.allSatisfy { $0.index == 1 && $0.count == 2 }, "\(lean)")
        XCTAssertGreaterThan(Set(lean.map(\.marks)).count, 1, "the count moved while the migration ran: \(migrations)")
        XCTAssertNil(progress.current, "nothing runs once the store is open")
        XCTAssertEqual(progress.completedMigrations, 2)

        // The handler is gone: the store's own work moves nothing.
        let marks = progress.marks
        XCTAssertGreaterThan(marks, 0)
        for k in 0..<200 {
            _ = try store.enqueue(
                [
                    NewOutgoingMessage(
                        id: String(format: "%032x", 5_000_000 + k), recipient: me, body: "x", createdAt: 1)
                ],
                sender: String(format: "%064x", 1))
        }
        _ = try store.historyPage(.peer(me), after: nil, before: nil, limit: 500)
        XCTAssertEqual(progress.marks, marks)
        try store.close()

        // A store that needs no upgrade reports nothing.
        let again = StoreUpgradeProgress()
        let reopened = try Store(directory: directory, upgradeProgress: again)
        XCTAssertEqual(again.completedMigrations, 0)
        XCTAssertEqual(again.marks, 0)
        try reopened.close()
    }

    /// A migration that fails reports its end too (the daemon then stops with the error).
    func testAFailedUpgradeEndsItsReport() throws {
        try PreLeanStoreFixture.write(
            path: directory + "/" + Store.fileName, messages: 10, me: String(format: "%064x", 99),
            room: String(format: "%032x", 5))
        let queue = try DatabaseQueue(path: directory + "/" + Store.fileName)
        try queue.write { db in
            try db.execute(sql: "UPDATE message SET reply_to = 'not hex at all, 32 characters!!!' WHERE row_id = 4")
        }
        try queue.close()
        let progress = StoreUpgradeProgress()
        XCTAssertThrowsError(try Store(directory: directory, upgradeProgress: progress))
        XCTAssertNil(progress.current)
        XCTAssertEqual(progress.completedMigrations, 0)
    }
}

/// A store whose applied migrations are not a prefix of today's registration order (a
/// store made by a build whose migrations were registered in another order, as happened
/// when two branches each added one) upgrades as `DatabaseMigrator.migrate(_:)` does: the
/// missing one runs. GRDB's `migrate(_:upTo:)` stops the process (`fatalError`, "already
/// migrated beyond") for a target before an applied migration, so the per-migration
/// report must not ask it for one.
final class StoreUpgradeProgressOrderTests: StoreDirectoryTestCase {
    func testAPendingMigrationBeforeAnAppliedOneStillRuns() throws {
        func migrator(_ names: [String]) -> DatabaseMigrator {
            var m = DatabaseMigrator()
            for name in names {
                m.registerMigration(name) { db in try db.execute(sql: "CREATE TABLE t_\(name) (x INTEGER)") }
            }
            return m
        }
        let queue = try DatabaseQueue(path: directory + "/order.sqlite")
        try migrator(["a", "c"]).migrate(queue)
        let progress = StoreUpgradeProgress()
        try StoreUpgradeProgress.migrate(queue, with: migrator(["a", "b", "c", "d"]), reporting: progress)
        let tables = try queue.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't_%'")
        }
        XCTAssertEqual(Set(tables), ["t_a", "t_b", "t_c", "t_d"])
        XCTAssertEqual(progress.completedMigrations, 2, "b and d (in one step)")
        XCTAssertNil(progress.current)
        try queue.close()
    }
}
