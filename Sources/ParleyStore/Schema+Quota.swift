import GRDB

extension Schema {
    /// `quota-v1` (issue 15): a recipient may refuse to store our messages (its receive
    /// quota, its disk; docs/PROTOCOL.md "refused"). The message stays queued; the last
    /// refusal of each is kept here so the user can be told why it is not delivered.
    static func registerQuotaMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("quota-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE message_refusal (
                        row_id INTEGER PRIMARY KEY,
                        reason INTEGER NOT NULL,
                        at     INTEGER NOT NULL
                    ) STRICT;
                    """)
        }
    }
}
