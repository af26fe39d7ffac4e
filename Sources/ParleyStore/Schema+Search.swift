import Foundation
import GRDB
import GRDBSQLite

/// Full-text search over message bodies (SearchText.swift says what is indexed and why).
extension Schema {
    /// The SQL function that turns a body (UTF-8 BLOB) into the text the index gets. It is
    /// Swift (`SearchText.indexText`), registered on every connection the store opens, so
    /// the triggers below index exactly what the queries expect.
    static let searchTextFunction = "parley_search_text"

    /// Registered through SQLite's C API, not GRDB's `DatabaseFunction`: that one converts
    /// each argument to a `DatabaseValue`, `Data` and `String` and the result back, about
    /// 6,000 instructions per body indexed (callgrind, docs/BENCHMARKS.md), for a function
    /// that returns most bodies unchanged (`SearchText.indexText`'s fast path, tested here
    /// on the bytes before any `String` is made).
    static func registerSearchFunction(_ db: Database) {
        // Deterministic like GRDB's `pure`; it cannot fail but for memory (then the first
        // statement using the function fails with "no such function", loudly).
        _ = sqlite3_create_function_v2(
            db.sqliteConnection, searchTextFunction, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, count, values in Schema.searchText(context, count, values) }, nil, nil, nil)
    }

    /// `parley_search_text(body)`: NULL for NULL, else the index text of the value's bytes
    /// (a body is a UTF-8 BLOB), as TEXT.
    private static func searchText(
        _ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?
    ) {
        guard count == 1, let value = values?[0], sqlite3_value_type(value) != SQLITE_NULL else {
            sqlite3_result_null(context)
            return
        }
        let start =
            sqlite3_value_type(value) == SQLITE_BLOB
            ? sqlite3_value_blob(value) : UnsafeRawPointer(sqlite3_value_text(value))
        let bytes = UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : Int(sqlite3_value_bytes(value)))
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        func result(_ utf8: UnsafeRawBufferPointer) {
            guard let base = utf8.baseAddress, !utf8.isEmpty else { return sqlite3_result_text(context, "", 0, nil) }
            sqlite3_result_text(context, base.assumingMemoryBound(to: CChar.self), Int32(utf8.count), transient)
        }
        // No byte that can start a CJK scalar: indexed as it is (`SearchText.indexText`).
        if !bytes.contains(where: { $0 >= 0xE1 }) { return result(bytes) }
        var text = SearchText.indexText(String(decoding: bytes, as: UTF8.self))
        text.withUTF8 { result(UnsafeRawBufferPointer($0)) }
    }

    static func registerSearchMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("message-search-v1") { db in
            try db.execute(
                sql: """
                    -- Contentless: the bodies are in message_body already; the index keeps only
                    -- its terms (a few bytes per word). rowid is message.row_id.
                    CREATE VIRTUAL TABLE message_search USING fts5(
                        body, content = '', tokenize = 'unicode61 remove_diacritics 2');
                    -- Every body ever stored is indexed: the existing ones now, new ones by trigger,
                    -- so no insert path (direct, room, future kinds) can forget it.
                    INSERT INTO message_search (rowid, body)
                        SELECT row_id, \(searchTextFunction)(body) FROM message_body;
                    CREATE TRIGGER message_search_insert AFTER INSERT ON message_body BEGIN
                        INSERT INTO message_search (rowid, body) VALUES (new.row_id, \(searchTextFunction)(new.body));
                    END;
                    -- A contentless index forgets a row only when told its old text.
                    CREATE TRIGGER message_search_delete AFTER DELETE ON message_body BEGIN
                        INSERT INTO message_search (message_search, rowid, body)
                            VALUES ('delete', old.row_id, \(searchTextFunction)(old.body));
                    END;
                    CREATE TRIGGER message_search_update AFTER UPDATE OF body ON message_body BEGIN
                        INSERT INTO message_search (message_search, rowid, body)
                            VALUES ('delete', old.row_id, \(searchTextFunction)(old.body));
                        INSERT INTO message_search (rowid, body) VALUES (new.row_id, \(searchTextFunction)(new.body));
                    END;
                    """)
        }
    }

    /// Bodies are indexed in batches from now on (`SearchIndexFeed`): the per-row insert
    /// trigger goes, and the delete/update triggers act only on rows already indexed (a
    /// contentless index must never be told to forget a row it does not hold; a row above
    /// the mark is indexed later with the body it has then).
    static func registerSearchBatchMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("message-search-batched-v1") { db in
            let mark = "(SELECT value FROM counter WHERE name = '\(Counter.searchIndexedThrough)')"
            try db.execute(
                sql: """
                    -- The insert trigger indexed every body stored so far.
                    INSERT INTO counter (name, value)
                        VALUES ('\(Counter.searchIndexedThrough)', (SELECT COALESCE(MAX(row_id), 0) FROM message_body));
                    DROP TRIGGER message_search_insert;
                    DROP TRIGGER message_search_delete;
                    DROP TRIGGER message_search_update;
                    CREATE TRIGGER message_search_delete AFTER DELETE ON message_body
                    WHEN old.row_id <= \(mark) BEGIN
                        INSERT INTO message_search (message_search, rowid, body)
                            VALUES ('delete', old.row_id, \(searchTextFunction)(old.body));
                    END;
                    CREATE TRIGGER message_search_update AFTER UPDATE OF body ON message_body
                    WHEN old.row_id <= \(mark) BEGIN
                        INSERT INTO message_search (message_search, rowid, body)
                            VALUES ('delete', old.row_id, \(searchTextFunction)(old.body));
                        INSERT INTO message_search (rowid, body) VALUES (new.row_id, \(searchTextFunction)(new.body));
                    END;
                    """)
        }
    }
}
