import Foundation
import GRDB
import GRDBSQLite

extension Schema {
    static let leanMessagesMigration = "lean-messages-v1"

    /// The SQL function that turns hex TEXT into a BLOB (NULL for anything that is not an
    /// even number of hex digits). SQLite 3.40 (Debian 12) has no `unhex()`; registered on
    /// every connection the store opens (and by the migration itself), for the queries that
    /// compare a hex id kept in another table (room sync, actions) with the message table.
    static let unhexFunction = "parley_unhex"

    /// Registered through SQLite's C API for the same reason as `registerSearchFunction`:
    /// the migration calls it five times per message on stores of a million messages.
    static func registerUnhexFunction(_ db: Database) {
        _ = sqlite3_create_function_v2(
            db.sqliteConnection, unhexFunction, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nil,
            { context, count, values in Schema.unhex(context, count, values) }, nil, nil, nil)
    }

    private static func unhex(
        _ context: OpaquePointer?, _ count: Int32, _ values: UnsafeMutablePointer<OpaquePointer?>?
    ) {
        guard count == 1, let value = values?[0], sqlite3_value_type(value) == SQLITE_TEXT,
            let text = sqlite3_value_text(value)
        else { return sqlite3_result_null(context) }
        let length = Int(sqlite3_value_bytes(value))
        guard length > 0, length % 2 == 0 else { return sqlite3_result_null(context) }
        var bytes = [UInt8](repeating: 0, count: length / 2)
        for k in 0..<(length / 2) {
            let high = nibble(text[2 * k])
            let low = nibble(text[2 * k + 1])
            guard high < 16, low < 16 else { return sqlite3_result_null(context) }
            bytes[k] = high << 4 | low
        }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        bytes.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32($0.count), transient) }
    }

    /// The value of one hex digit (either case), or 0xFF.
    private static func nibble(_ c: UInt8) -> UInt8 {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return 0xFF
        }
    }

    /// `lean-messages-v1` (issue 32): the `message` table in its lean shape, the largest
    /// share of what storing a message cost (docs/BENCHMARKS.md, issue 32 part 4).
    ///
    /// Before, every row carried three 64-character hex identities (sender, recipient and
    /// `peer`, the one of the two that is not this node) and a 32-character hex id, in
    /// five indexes, and spelled its direction and state out as words. Now:
    /// - `party (id, key)`: every identity key (32 bytes) and room id (16 bytes) a message
    ///   names, once; messages refer to it by its small integer id. A party is never
    ///   deleted (messages and their history keep naming it), so a reference never dangles;
    ///   it has no foreign key, which would cost a lookup on every insert.
    /// - `message.id` and `reply_to`: the 16 bytes; `sender`, `recipient`, `room`: party ids.
    /// - `peer` (the other party: `recipient` of an outgoing message, `sender` of an
    ///   incoming one) stays a column, one byte or two now: an index on that expression
    ///   would save them, but SQLite 3.40's planner uses an expression index only against a
    ///   constant or a bound value, never against a subquery or another table's column, and
    ///   history, quota and expiry compare it with both.
    /// - `direction` is `incoming` (0 or 1, stored in no bytes at all: SQLite encodes the
    ///   integers 0 and 1 in the record header); `state` is 0 queued, 1 delivered,
    ///   2 received; the check ties them as the old one did.
    /// - Indexes: the message key (id, sender), unique; the outbox (recipient, sequence)
    ///   of queued messages only; history per peer; unread incoming and owed read receipts
    ///   per sender, partial (small: only unread rows); room messages, partial.
    ///
    /// The table is rebuilt (SQLite's procedure, as in `message-checks-without-lists-v1`):
    /// every row is copied with its `row_id` (a client's cursor stays valid), AUTOINCREMENT's
    /// high-water mark is kept, and the tables that refer to messages by row
    /// (`message_body`, `message_search`, `room_delivery`, `reaction`, `message_refusal`,
    /// `event.message_row`) or by hex id (`message_action`, `room_signed_message`) keep
    /// their values and find the same messages. A value that is not hex (only a damaged or
    /// hand-edited file has one) stops the migration before anything changes: the store
    /// is then refused with the row named, never migrated with that row lost.
    static func registerLeanMessagesMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration(leanMessagesMigration) { db in
            registerUnhexFunction(db)
            let unhex = unhexFunction
            // Every hex value must convert: 16-byte ids, 32-byte keys, 16-byte room ids.
            if let bad = try Row.fetchOne(
                db,
                sql: """
                    SELECT row_id, id, sender, recipient, room, reply_to FROM message
                    WHERE length(\(unhex)(id)) IS NOT 16 OR length(\(unhex)(sender)) IS NOT 32
                       OR COALESCE(length(\(unhex)(recipient)), 0) NOT IN (16, 32)
                       OR (room IS NOT NULL AND length(\(unhex)(room)) IS NOT 16)
                       OR (reply_to IS NOT NULL AND length(\(unhex)(reply_to)) IS NOT 16)
                    LIMIT 1
                    """)
            {
                throw UnexpectedStoredValue(column: "message (row \(bad[0] as Int64))", value: "\(bad)")
            }
            let highWater = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'message'") ?? 0
            // Triggers on the old table (none in Parley's own schema) are re-created after.
            let triggers = try String.fetchAll(
                db,
                sql: """
                    SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'message' AND sql IS NOT NULL
                    ORDER BY name
                    """)
            try db.execute(
                sql: """
                    CREATE TABLE party (
                        id  INTEGER PRIMARY KEY,
                        key BLOB NOT NULL UNIQUE
                    ) STRICT;
                    -- Senders first: this node's own key, the most frequent, gets the smallest id.
                    INSERT INTO party (key)
                        SELECT k FROM (
                            SELECT \(unhex)(sender) AS k, COUNT(*) AS n FROM message GROUP BY sender
                            UNION ALL SELECT \(unhex)(recipient), COUNT(*) FROM message GROUP BY recipient
                            UNION ALL SELECT \(unhex)(room), COUNT(*) FROM message WHERE room IS NOT NULL GROUP BY room)
                        GROUP BY k ORDER BY SUM(n) DESC, k;

                    CREATE TABLE message_lean (
                        row_id          INTEGER PRIMARY KEY AUTOINCREMENT,
                        id              BLOB NOT NULL,
                        sender          INTEGER NOT NULL,
                        recipient       INTEGER NOT NULL,
                        peer            INTEGER NOT NULL,
                        incoming        INTEGER NOT NULL,
                        state           INTEGER NOT NULL,
                        sequence        INTEGER NOT NULL,
                        created_at      INTEGER NOT NULL,
                        delivered_at    INTEGER,
                        received_at     INTEGER,
                        read_at         INTEGER,
                        receipt_pending INTEGER NOT NULL DEFAULT 0 CHECK (receipt_pending = 0 OR receipt_pending = 1),
                        room            INTEGER,
                        reply_to        BLOB,
                        edited_at       INTEGER,
                        deleted_at      INTEGER,
                        change_sequence INTEGER,
                        CHECK (state >= 0 AND state <= 2 AND incoming = (state = 2)),
                        CHECK (peer = CASE incoming WHEN 0 THEN recipient ELSE sender END)
                    ) STRICT;
                    INSERT INTO message_lean (row_id, id, sender, recipient, peer, incoming, state, sequence, created_at,
                                              delivered_at, received_at, read_at, receipt_pending, room, reply_to,
                                              edited_at, deleted_at, change_sequence)
                        SELECT m.row_id, \(unhex)(m.id),
                               (SELECT id FROM party WHERE key = \(unhex)(m.sender)),
                               (SELECT id FROM party WHERE key = \(unhex)(m.recipient)),
                               (SELECT id FROM party WHERE key = \(unhex)(m.peer)),
                               m.direction = 'incoming',
                               CASE m.state WHEN 'queued' THEN 0 WHEN 'delivered' THEN 1 ELSE 2 END,
                               m.sequence, m.created_at, m.delivered_at, m.received_at, m.read_at,
                               m.receipt_pending,
                               (SELECT id FROM party WHERE key = \(unhex)(m.room)),
                               \(unhex)(m.reply_to), m.edited_at, m.deleted_at, m.change_sequence
                        FROM message m ORDER BY m.row_id;
                    """)
            try db.execute(
                sql: "UPDATE sqlite_sequence SET seq = MAX(seq, ?) WHERE name = 'message_lean'", arguments: [highWater])
            if db.changesCount == 0 {
                try db.execute(
                    sql: "INSERT INTO sqlite_sequence (name, seq) VALUES ('message_lean', ?)", arguments: [highWater])
            }
            try db.execute(sql: "DROP TABLE message")
            // Legacy rename: SQLite 3.26+ otherwise re-checks every view and trigger that
            // names `message`, and fails on those while the table is gone.
            try db.execute(sql: "PRAGMA legacy_alter_table = ON")
            try db.execute(sql: "ALTER TABLE message_lean RENAME TO message")
            try db.execute(sql: "PRAGMA legacy_alter_table = OFF")
            try db.execute(
                sql: """
                    -- The message key: a message is its sender's id. (id, sender): the same index
                    -- finds a message by id alone (acks, message(id:)).
                    CREATE UNIQUE INDEX \(Index.messageIDSender) ON message (id, sender);
                    -- The outbox: only undelivered messages, however long the history grows.
                    CREATE INDEX message_queued ON message (recipient, sequence) WHERE state = 0;
                    -- History per peer (the other party; row_id is the last key column).
                    CREATE INDEX message_peer ON message (peer);
                    -- Unread incoming messages and owed read receipts, per sender: only those rows.
                    CREATE INDEX message_unread ON message (sender) WHERE incoming = 1 AND read_at IS NULL;
                    CREATE INDEX message_receipt_pending ON message (sender) WHERE receipt_pending = 1;
                    CREATE INDEX message_room ON message (room) WHERE room IS NOT NULL;
                    """)
            for sql in triggers { try db.execute(sql: sql) }
        }
    }

}
