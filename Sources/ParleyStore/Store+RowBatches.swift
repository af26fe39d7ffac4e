import GRDB
import ParleyCore

/// Many rows per INSERT statement on the message path.
///
/// Every execution of an INSERT into `message` pays the same fixed cost whatever it
/// inserts: a cursor allocated (and freed) for the table, each of its six indexes and
/// `sqlite_sequence`; AUTOINCREMENT's read of `sqlite_sequence` before and its write after;
/// the statement's savepoint; the halt. Measured with callgrind on a copy of a bench store
/// (Debian's SQLite, which has no lookaside allocator, so each of those is a `malloc` and
/// a `free` behind a mutex): one row per statement cost ~36,000 instructions per message
/// for the message row and its body, sixteen rows per statement ~18,700
/// (docs/BENCHMARKS.md, issue 32 part 6). So a batch is inserted `maxRows` rows at a time
/// with a multi-row `VALUES`, the rest in power-of-two chunks, each chunk size one cached
/// statement.
///
/// Row ids: a multi-row INSERT into an AUTOINCREMENT table gives its rows consecutive ids
/// in `VALUES` order, each one above the largest the table ever had; so a chunk of n rows
/// that all went in (`changesCount == n`) holds `lastInsertedRowID - n + 1 ... lastInsertedRowID`.
/// A chunk with a message stored before fails on the message key and goes row by row
/// (`storeChecked`, `enqueue`).
enum RowBatch {
    /// Rows per statement at most: enough that the fixed cost is a few percent of a row's;
    /// few enough that a statement has at most 7 × 32 = 224 parameters (SQLite's limit is 32,766).
    static let maxRows = 32

    /// `count` rows split into chunks: as many of `maxRows` as fit, then the rest in
    /// descending powers of two (at most six statement shapes per kind, each compiled once).
    /// A sequence, not an array: one message in flight is one chunk, and allocations are
    /// what that path pays for most.
    static func chunks(_ count: Int) -> Chunks { Chunks(count: count) }

    struct Chunks: Sequence, IteratorProtocol {
        let count: Int
        private var start = 0
        private var size = RowBatch.maxRows

        init(count: Int) { self.count = count }

        mutating func next() -> Range<Int>? {
            guard start < count else { return nil }
            while size > count - start { size /= 2 }
            defer { start += size }
            return start..<(start + size)
        }
    }

    /// `prefix` followed by `rows` copies of `row(k)` (k = 0..<rows) joined by commas:
    /// the SQL of one chunk size.
    static func sql(_ prefix: String, rows: Int, suffix: String = "", _ row: (Int) -> String) -> String {
        prefix + (0..<rows).map(row).joined(separator: ", ") + suffix
    }

    /// The SQL of every chunk size, indexed by log2 of the size: built once.
    static func shapes(_ prefix: String, suffix: String = "", _ row: (Int) -> String) -> [String] {
        var sizes: [String] = []
        var size = 1
        while size <= maxRows {
            sizes.append(sql(prefix, rows: size, suffix: suffix, row))
            size *= 2
        }
        return sizes
    }

    /// The entry of `shapes` for a chunk of `rows` (a power of two up to `maxRows`).
    static func shape(_ shapes: [String], rows: Int) -> String {
        shapes[rows.trailingZeroBitCount]
    }
}

extension Store {
    /// The outgoing message row, six parameters per row (`enqueue`).
    static let outgoingInsertShapes = RowBatch.shapes(
        "INSERT INTO message (id, sender, recipient, peer, incoming, state, sequence, created_at, reply_to) VALUES "
    ) { k in
        let p = 6 * k
        return "(?\(p + 1), ?\(p + 2), ?\(p + 3), ?\(p + 3), 0, 0, ?\(p + 4), ?\(p + 5), ?\(p + 6))"
    }

    /// The incoming message row, seven parameters per row (`storeIncoming`). A row whose
    /// (id, sender) is stored already fails the statement, which then undoes its rows
    /// (SQLite's ABORT): skipping it (`ON CONFLICT DO NOTHING`) would leave the other rows'
    /// ids unknown, since a skipped row may use up an id.
    static let incomingInsertShapes = RowBatch.shapes(
        "INSERT INTO message (id, sender, recipient, peer, incoming, state, sequence, created_at, received_at, reply_to)"
            + " VALUES "
    ) { k in
        let p = 7 * k
        return "(?\(p + 1), ?\(p + 2), ?\(p + 3), ?\(p + 2), 1, 2, ?\(p + 4), ?\(p + 5), ?\(p + 6), ?\(p + 7))"
    }

    /// One incoming row, skipped if its key is stored (a chunk that failed on the key goes
    /// row by row with this).
    static let incomingInsertOrSkip =
        RowBatch.shape(incomingInsertShapes, rows: 1) + " ON CONFLICT (id, sender) DO NOTHING"

    /// Bodies: (row_id, body) per row.
    static let bodyInsertShapes = RowBatch.shapes("INSERT INTO message_body (row_id, body) VALUES ") { _ in "(?, ?)" }

    /// Stores `body(k)` as the body of row `firstRow + k` for k in 0..<count, one chunk per
    /// statement.
    /// After a multi-row INSERT of `count` message rows: checks that every row went in,
    /// stores their bodies, and returns the first row's id (the rows' ids are consecutive:
    /// `message` has AUTOINCREMENT, no triggers, and the rows were given no ids).
    func insertedMessageRows(_ db: Database, count: Int, _ body: (Int) -> String) throws -> Int64 {
        guard db.changesCount == count else {
            throw UnexpectedStoredValue(column: "message", value: "\(db.changesCount) of \(count) rows inserted")
        }
        let firstRow = db.lastInsertedRowID - Int64(count) + 1
        try insertBodies(db, firstRow: firstRow, count: count, body)
        return firstRow
    }

    func insertBodies(_ db: Database, firstRow: Int64, count: Int, _ body: (Int) -> String) throws {
        for chunk in RowBatch.chunks(count) {
            var values: [DirectValue] = []
            values.reserveCapacity(2 * chunk.count)
            for k in chunk {
                values.append(.int(firstRow + Int64(k)))
                values.append(.utf8Blob(body(k)))
            }
            try heldShape(db, .body, rows: chunk.count).executeDirect(values)
        }
    }
}
