import Foundation
import GRDB
import XCTest

@testable import ParleyStore

/// The search index fed in batches (`SearchIndexFeed`): the policy alone, then on real
/// SQLite files, including a store left as a crash leaves it.
final class SearchIndexFeedTests: StoreDirectoryTestCase {
    private let me = String(repeating: "01", count: 32)
    private let bob = String(repeating: "b0", count: 32)
    private func id(_ n: Int) -> String { String(format: "%032x", n) }

    private func send(_ store: Store, _ bodies: [String], first: Int) throws -> [StoredMessage] {
        try store.enqueue(
            bodies.enumerated().map { i, body in
                NewOutgoingMessage(id: id(first + i), recipient: bob, body: body, createdAt: Int64(first + i))
            }, sender: me)
    }

    private func mark(_ store: Store) throws -> Int64 {
        try store.read { db in
            try Int64.fetchOne(db, sql: "SELECT value FROM counter WHERE name = 'search_indexed_through'") ?? -1
        }
    }

    /// Rows the FTS5 index holds (its per-document size table has one row per document).
    private func indexedDocuments(_ store: Store) throws -> Int {
        try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM message_search_docsize") ?? -1 }
    }

    // MARK: - The policy

    func testAWriteFeedsOnlyOnceTheBacklogIsDue() {
        var feed = SearchIndexFeed(indexedThrough: 10)
        XCTAssertNil(feed.rowsToIndex(newestBodyRow: 10, occasion: .writeCommitting), "nothing new")
        XCTAssertNil(feed.rowsToIndex(newestBodyRow: 7, occasion: .catchUp), "bodies deleted: nothing new")
        XCTAssertNil(
            feed.rowsToIndex(newestBodyRow: 10 + SearchIndexFeed.maxBacklogRows - 1, occasion: .writeCommitting))
        let due = 10 + SearchIndexFeed.maxBacklogRows
        XCTAssertEqual(feed.rowsToIndex(newestBodyRow: due, occasion: .writeCommitting), 11...due)
        XCTAssertEqual(feed.rowsToIndex(newestBodyRow: 11, occasion: .catchUp), 11...11, "a search takes any backlog")
        feed.fed(through: due)
        XCTAssertEqual(feed.indexedThrough, due)
        feed.fed(through: 5)
        XCTAssertEqual(feed.indexedThrough, due, "the mark never goes back")
    }

    // MARK: - On a store

    func testAMessageIsFoundRightAfterItIsStoredThoughTheIndexLags() throws {
        let store = try Store(directory: directory, durability: .normal)
        let before = try mark(store)
        _ = try send(store, ["the quarterly budget"], first: 1)
        XCTAssertEqual(try mark(store), before, "one message does not feed the index by itself")
        XCTAssertEqual(
            try store.search("budget", scope: .everything, limit: 5).hits.map(\.message.body), ["the quarterly budget"])
        XCTAssertGreaterThan(try mark(store), before, "the search fed it first")
    }

    func testABatchAsLargeAsTheBacklogIsIndexedInItsOwnTransaction() throws {
        let store = try Store(directory: directory, durability: .normal)
        let n = Int(SearchIndexFeed.maxBacklogRows)
        let sent = try send(store, (0..<n).map { "word\($0) pipelined" }, first: 1)
        XCTAssertEqual(try mark(store), sent.last?.rowID, "fed at the batch's commit")
        XCTAssertEqual(try indexedDocuments(store), n)
    }

    func testBodiesACrashLeftUnindexedAreIndexedAtOpen() throws {
        // What SIGKILL leaves: the committed WAL, the index behind the newest bodies. A copy
        // of the files taken while the store is open (and idle) is exactly that image.
        let store = try Store(directory: directory, durability: .full)
        _ = try send(store, ["before the crash kumquat"], first: 1)
        let crashed = directory + "/crashed"
        try FileManager.default.createDirectory(atPath: crashed, withIntermediateDirectories: false)
        for suffix in ["", "-wal"] {
            try FileManager.default.copyItem(
                atPath: directory + "/parley.sqlite" + suffix, toPath: crashed + "/parley.sqlite" + suffix)
        }
        try store.close()

        let reopened = try Store(directory: crashed, durability: .full)
        XCTAssertEqual(try indexedDocuments(reopened), 1, "opening indexed what the crash left behind")
        XCTAssertEqual(
            try reopened.search("kumquat", scope: .everything, limit: 5).hits.map(\.message.body),
            ["before the crash kumquat"])
    }

    func testEditingOrErasingABodyNotYetIndexedKeepsTheIndexExact() throws {
        let store = try Store(directory: directory, durability: .normal)
        let sent = try send(store, ["draft with typo", "gone soon walrus"], first: 1)
        _ = try store.performLocalAction(
            NewLocalAction(id: id(10), peer: bob, target: sent[0], kind: .edit, body: "final text", createdAt: 2),
            me: me, at: 3)
        _ = try store.performLocalAction(
            NewLocalAction(id: id(11), peer: bob, target: sent[1], kind: .delete, body: nil, createdAt: 2),
            me: me, at: 3)
        XCTAssertEqual(try store.search("typo", scope: .everything, limit: 5).hits, [])
        XCTAssertEqual(try store.search("walrus", scope: .everything, limit: 5).hits, [])
        XCTAssertEqual(try store.search("final", scope: .everything, limit: 5).hits.map(\.message.body), ["final text"])
        // And once indexed, an edit replaces the indexed text (the update trigger).
        _ = try store.performLocalAction(
            NewLocalAction(id: id(12), peer: bob, target: sent[0], kind: .edit, body: "second version", createdAt: 4),
            me: me, at: 5)
        XCTAssertEqual(try store.search("final", scope: .everything, limit: 5).hits, [])
        XCTAssertEqual(try store.search("second", scope: .everything, limit: 5).hits.map(\.message.body), ["second version"])
        try store.read { db in
            // FTS5's own check: the index agrees with itself (a contentless index told to
            // forget a row it never held would fail it).
            try db.execute(sql: "INSERT INTO message_search (message_search, rank) VALUES ('integrity-check', 0)")
        }
        XCTAssertEqual(try indexedDocuments(store), 2)
    }

    func testAStoreFromBeforeBatchedIndexingKeepsEveryMessageFindable() throws {
        // A store as the previous release left it: bodies indexed by the per-row trigger.
        do {
            let store = try Store(directory: directory, durability: .normal)
            _ = try send(store, ["indexed by the old trigger"], first: 1)
            try store.close()
        }
        let queue = try DatabaseQueue(path: directory + "/parley.sqlite")
        try queue.write { db in
            try db.execute(
                sql: """
                    DROP TRIGGER message_search_delete; DROP TRIGGER message_search_update;
                    DELETE FROM message_search;
                    DELETE FROM counter WHERE name = 'search_indexed_through';
                    DELETE FROM grdb_migrations WHERE identifier = 'message-search-batched-v1';
                    """)
        }
        try queue.close()
        do {
            // Re-create the old triggers (as the message-search-v1 migration left them) and
            // index the existing body the way they did.
            var configuration = Configuration()
            configuration.prepareDatabase { db in Schema.registerSearchFunction(db) }
            let old = try DatabaseQueue(path: directory + "/parley.sqlite", configuration: configuration)
            try old.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO message_search (rowid, body) SELECT row_id, parley_search_text(body) FROM message_body;
                        CREATE TRIGGER message_search_insert AFTER INSERT ON message_body BEGIN
                            INSERT INTO message_search (rowid, body) VALUES (new.row_id, parley_search_text(new.body));
                        END;
                        CREATE TRIGGER message_search_delete AFTER DELETE ON message_body BEGIN
                            INSERT INTO message_search (message_search, rowid, body)
                                VALUES ('delete', old.row_id, parley_search_text(old.body));
                        END;
                        CREATE TRIGGER message_search_update AFTER UPDATE OF body ON message_body BEGIN
                            INSERT INTO message_search (message_search, rowid, body)
                                VALUES ('delete', old.row_id, parley_search_text(old.body));
                            INSERT INTO message_search (rowid, body) VALUES (new.row_id, parley_search_text(new.body));
                        END;
                        """)
            }
            try old.close()
        }
        let store = try Store(directory: directory, durability: .normal)
        XCTAssertEqual(try indexedDocuments(store), 1, "the old index kept, not indexed twice")
        _ = try send(store, ["stored after the migration"], first: 2)
        XCTAssertEqual(
            try store.search("indexed", scope: .everything, limit: 5).hits.map(\.message.body),
            ["indexed by the old trigger"])
        XCTAssertEqual(
            try store.search("migration", scope: .everything, limit: 5).hits.map(\.message.body),
            ["stored after the migration"])
        XCTAssertEqual(try indexedDocuments(store), 2)
        let triggers = try store.read { db in
            try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'message_search%' ORDER BY name"
            )
        }
        XCTAssertEqual(triggers, ["message_search_delete", "message_search_update"], "no per-row insert trigger")
    }
}
