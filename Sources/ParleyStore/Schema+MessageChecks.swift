import Foundation
import GRDB

extension Schema {
    static let messageChecksMigration = "message-checks-without-lists-v1"

    /// `message-checks-without-lists-v1` (issue 32): the `message` table's check on `state`
    /// is written as comparisons instead of a three-value IN list. SQLite evaluates an IN
    /// list of more than two constants by building a temporary b-tree, and a CHECK runs on
    /// every INSERT and on every UPDATE of `state`: two temporary b-trees per message on
    /// the sender (~18,000 instructions in callgrind), one on the receiver. The same rows
    /// are accepted; nothing else changes.
    ///
    /// SQLite cannot alter a CHECK, so the table is rebuilt (SQLite's documented procedure,
    /// foreign keys checked at the end by GRDB): the new definition is the stored one with
    /// only that check rewritten, so columns other migrations added come along; every row
    /// is copied with its `row_id`; AUTOINCREMENT's high-water mark is kept (a cursor a
    /// client holds is never reused); indexes and triggers on it are re-created from their
    /// stored SQL; views and other tables' references name it and find it again.
    static func registerMessageChecksMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration(messageChecksMigration) { db in
            let listCheck = "CHECK (state IN ('queued', 'delivered', 'received'))"
            let comparisons = "CHECK (state = 'queued' OR state = 'delivered' OR state = 'received')"
            let prefix = "CREATE TABLE message ("
            guard
                let table = try String.fetchOne(
                    db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'message'"),
                table.hasPrefix(prefix), table.contains(listCheck)
            else { return }  // not the shape this rewrites: leave it as it is
            let rebuilt =
                "CREATE TABLE message_rebuilt ("
                + table.dropFirst(prefix.count)
                .replacingOccurrences(of: listCheck, with: comparisons)
            // Indexes and triggers go with the dropped table: re-created from their SQL.
            let dependents = try String.fetchAll(
                db,
                sql: """
                    SELECT sql FROM sqlite_master
                    WHERE type IN ('index', 'trigger') AND tbl_name = 'message' AND sql IS NOT NULL
                    ORDER BY type = 'trigger', name
                    """)
            let highWater = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'message'") ?? 0
            try db.execute(sql: rebuilt)
            try db.execute(sql: "INSERT INTO message_rebuilt SELECT * FROM message")
            try db.execute(
                sql: "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'message_rebuilt'",
                arguments: [highWater])
            if db.changesCount == 0 {
                try db.execute(
                    sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('message_rebuilt', ?)", arguments: [highWater]
                )
            }
            try db.execute(sql: "DROP TABLE message")
            // Legacy rename: SQLite 3.26+ otherwise re-checks every view and trigger that
            // names `message`, and fails on those while the table is gone.
            try db.execute(sql: "PRAGMA legacy_alter_table = ON")
            try db.execute(sql: "ALTER TABLE message_rebuilt RENAME TO message")
            try db.execute(sql: "PRAGMA legacy_alter_table = OFF")
            for sql in dependents { try db.execute(sql: sql) }
        }
    }
}
