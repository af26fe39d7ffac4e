import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32: the `message` table rebuilt so its check on `state` needs no temporary b-tree
/// (`Schema.registerMessageChecksMigration`), on a store of many messages written with the
/// schema before it: nothing lost, nothing changed, ids never reused.
final class MessageChecksMigrationTests: StoreDirectoryTestCase {
    /// Messages in the store the test migrates: 100,000 in the suite (a few seconds);
    /// `PARLEY_MIGRATION_TEST_MESSAGES=1000000` runs the issue's million by hand.
    private var messageCount: Int {
        ProcessInfo.processInfo.environment["PARLEY_MIGRATION_TEST_MESSAGES"].flatMap { Int($0) } ?? 100_000
    }

    private var path: String { directory + "/" + Store.fileName }

    /// A store at the schema the previous release left (every migration before this one),
    /// filled by SQL: outgoing and incoming, direct and room, read and unread, with bodies.
    private func oldStore(messages n: Int) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in Schema.registerSearchFunction(db) }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let migrations = Schema.migrator.migrations
        let previous = try XCTUnwrap(migrations.firstIndex(of: Schema.messageChecksMigration)).advanced(by: -1)
        try Schema.migrator.migrate(queue, upTo: migrations[previous])
        try queue.write { db in
            try db.execute(
                sql: """
                    WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
                    INSERT INTO message (id, direction, sender, recipient, peer, sequence, created_at, state,
                                         delivered_at, received_at, read_at, room, reply_to)
                    SELECT printf('%032x', i),
                           CASE i % 3 WHEN 0 THEN 'incoming' ELSE 'outgoing' END,
                           CASE i % 3 WHEN 0 THEN printf('%064x', i % 7) ELSE printf('%064x', 99) END,
                           CASE i % 3 WHEN 0 THEN printf('%064x', 99) ELSE printf('%064x', i % 7) END,
                           printf('%064x', i % 7), i, 1700000000000 + i,
                           CASE i % 3 WHEN 0 THEN 'received' WHEN 1 THEN 'queued' ELSE 'delivered' END,
                           CASE i % 3 WHEN 2 THEN 1700000000500 + i END,
                           CASE i % 3 WHEN 0 THEN 1700000000400 + i END,
                           CASE WHEN i % 5 = 0 THEN 1700000000900 + i END,
                           CASE WHEN i % 11 = 0 THEN printf('%032x', 5) END,
                           CASE WHEN i % 13 = 0 THEN printf('%032x', i - 1) END
                    FROM k;
                    INSERT INTO message_body (row_id, body) SELECT row_id, CAST('body ' || row_id AS BLOB) FROM message;
                    """, arguments: [n])
            // The newest rows deleted: AUTOINCREMENT must still never hand out their ids.
            try db.execute(sql: "DELETE FROM message_body WHERE row_id > ?", arguments: [n - 3])
            try db.execute(sql: "DELETE FROM message WHERE row_id > ?", arguments: [n - 3])
            // A view and a trigger naming the table (as a later migration might add) survive.
            try db.execute(
                sql: """
                    CREATE VIEW unread_test AS SELECT row_id FROM message WHERE read_at IS NULL;
                    CREATE TABLE trigger_test (n INTEGER NOT NULL);
                    CREATE TRIGGER message_trigger_test AFTER INSERT ON message BEGIN
                        INSERT INTO trigger_test (n) VALUES (new.row_id);
                    END;
                    """)
            // The search index is not under test: marked fed, so opening does not index them.
            try db.execute(
                sql: "UPDATE counter SET value = ? WHERE name = 'search_indexed_through'", arguments: [n - 3])
        }
        try queue.close()
    }

    /// Every row of `message` and the definitions of its indexes, as a comparable snapshot.
    private func snapshot(_ db: Database) throws -> (rows: [Row], indexes: [String]) {
        (
            try Row.fetchAll(db, sql: "SELECT * FROM message ORDER BY row_id"),
            try String.fetchAll(
                db,
                sql:
                    "SELECT sql FROM sqlite_master WHERE type <> 'table' AND tbl_name IN ('message', 'unread_test') ORDER BY name"
            )
        )
    }

    private func usesTemporaryBTree(_ db: Database, _ sql: String) throws -> Bool {
        try Row.fetchAll(db, sql: "EXPLAIN " + sql).contains { ($0["opcode"] as String?) == "OpenEphemeral" }
    }

    func testRebuildKeepsEveryMessageAndItsIdsAndNeedsNoTemporaryBTree() throws {
        let n = messageCount
        try oldStore(messages: n)
        let insert = """
            INSERT INTO message (id, direction, sender, recipient, peer, sequence, created_at, state)
            VALUES ('x', 'outgoing', 'a', 'b', 'b', 1, 1, 'queued')
            """
        let update = "UPDATE message SET state = 'delivered', delivered_at = 1 WHERE row_id = 1"
        let before = try DatabaseQueue(path: path).read { db in
            (try snapshot(db), try usesTemporaryBTree(db, insert), try usesTemporaryBTree(db, update))
        }
        XCTAssertEqual(before.0.rows.count, n - 3)
        XCTAssertTrue(before.1 && before.2, "the old check builds a temporary b-tree (what this migration removes)")

        // This migration alone (later ones, lean-messages-v1, rebuild the table again: their
        // own test is LeanMessagesMigrationTests).
        let started = Date()
        var configuration = Configuration()
        configuration.prepareDatabase { db in Schema.registerSearchFunction(db) }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try Schema.migrator.migrate(queue, upTo: Schema.messageChecksMigration)
        let took = Date().timeIntervalSince(started)
        print("MessageChecksMigrationTests: \(n) messages migrated in \(String(format: "%.2f", took)) s")
        let after = try queue.read { db in
            (
                try snapshot(db), try usesTemporaryBTree(db, insert), try usesTemporaryBTree(db, update),
                try Row.fetchAll(db, sql: "PRAGMA foreign_key_check"),
                try String.fetchOne(db, sql: "PRAGMA integrity_check")
            )
        }
        XCTAssertEqual(after.0.indexes, before.0.indexes, "the same indexes, trigger and view")
        XCTAssertEqual(after.0.rows.count, before.0.rows.count)
        XCTAssertTrue(after.0.rows == before.0.rows, "every row identical, row ids included")
        XCTAssertFalse(after.1 || after.2, "inserts and delivery marks need no temporary b-tree")
        XCTAssertEqual(after.3.count, 0)
        XCTAssertEqual(after.4, "ok")

        // The check still refuses what it refused.
        XCTAssertThrowsError(
            try queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO message (id, direction, sender, recipient, peer, sequence, created_at, state)
                        VALUES ('\(String(repeating: "e", count: 32))', 'outgoing', 'a', 'b', 'b', 1, 1, 'lost')
                        """)
            })
        try queue.close()
        // Ids continue above the deleted newest rows (through the later migrations too).
        let store = try Store(directory: directory)
        let me = String(repeating: "9", count: 64)
        let sent = try store.enqueue(
            [NewOutgoingMessage(id: String(repeating: "f", count: 32), recipient: me, body: "after", createdAt: 1)],
            sender: String(repeating: "8", count: 64))
        XCTAssertEqual(sent.first?.rowID, Int64(n) + 1, "AUTOINCREMENT's high-water mark survived the rebuild")
        try store.read { db in
            XCTAssertEqual(
                try Int64.fetchAll(db, sql: "SELECT n FROM trigger_test"), [Int64(n) + 1], "the trigger fired")
            XCTAssertEqual(
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM unread_test"),
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM message WHERE read_at IS NULL"))
        }
        XCTAssertEqual(try store.message(id: String(format: "%032x", 1))?.body, "body 1")
        let receivedRoom = try store.message(id: String(format: "%032x", 33))
        XCTAssertEqual(receivedRoom?.room?.hex, String(format: "%032x", 5))
        XCTAssertEqual(receivedRoom?.state, .received)
    }
}
