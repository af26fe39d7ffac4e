import GRDB

extension Schema {
    /// `journal-without-time-index-v1` (issue 32): the event journal's index on `at` is
    /// dropped. Every event written updated it (a second b-tree, and one more page in every
    /// message transaction's commit); the only query that used it, pruning by age, now
    /// scans the oldest events in id order (`Store.pruneEvents`). Nothing is lost: an index
    /// holds no data of its own.
    static func registerJournalIndexMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("journal-without-time-index-v1") { db in
            try db.execute(sql: "DROP INDEX IF EXISTS event_at")
        }
    }
}
