import Foundation
import GRDB

/// Full-text search over message bodies (SearchText.swift says what is indexed and why).
extension Schema {
    /// The SQL function that turns a body (UTF-8 BLOB) into the text the index gets. It is
    /// Swift (`SearchText.indexText`), registered on every connection the store opens, so
    /// the triggers below index exactly what the queries expect.
    static let searchTextFunction = "parley_search_text"

    static func registerSearchFunction(_ db: Database) {
        db.add(
            function: DatabaseFunction(searchTextFunction, argumentCount: 1, pure: true) { values in
                guard let data = Data.fromDatabaseValue(values[0]) else { return String.fromDatabaseValue(values[0]) }
                return SearchText.indexText(String(decoding: data, as: UTF8.self))
            })
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
