import GRDB

extension Schema {
    /// The one row of `message_counter` (since `message-counters-one-row-v1`).
    static let messageCounterTable = "message_counter"

    /// `message-counters-one-row-v1` (issue 32 part 9): the five counters the message path
    /// moves (last sequence number, last journal id, the totals by state) leave the `counter`
    /// table, one row per name, for ONE row with a column each. A transaction now writes them
    /// all with one single-row UPDATE (`CounterLedger`); one UPDATE per counter row cost
    /// SQLite ~5,500 instructions each, and a multi-row UPDATE of several rows cost more than
    /// that (a range scan, every row rewritten, a statement journal). Nothing is lost: the
    /// values are copied, and a store missing one of them fails the migration (NOT NULL)
    /// rather than starting with a made-up value. The other counters (`events_pruned_through`,
    /// `search_indexed_through`) stay rows of `counter`. No table is scanned: the migration
    /// costs the same for a store of any size.
    static func registerMessageCountersMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("message-counters-one-row-v1") { db in
            let names = CounterLedger.Name.allCases.map(\.column)
            let columns = names.map { "\($0) INTEGER NOT NULL" }.joined(separator: ",\n    ")
            let values = names.map { "(SELECT value FROM counter WHERE name = '\($0)')" }.joined(separator: ", ")
            let list = names.map { "'\($0)'" }.joined(separator: ", ")
            try db.execute(
                sql: """
                    CREATE TABLE \(messageCounterTable) (
                        id INTEGER PRIMARY KEY CHECK (id = 1),
                        \(columns)
                    ) STRICT;
                    INSERT INTO \(messageCounterTable) (id, \(names.joined(separator: ", "))) VALUES (1, \(values));
                    DELETE FROM counter WHERE name IN (\(list));
                    """)
        }
    }
}
