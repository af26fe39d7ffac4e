import GRDB

/// The message path's multi-row INSERT statements (`RowBatch`), one per kind and chunk size,
/// prepared at first use and held by the store for the connection's life
/// (`TransactionStatements.shapes`, released with it before the connection closes).
///
/// Not GRDB's `cachedStatement(sql:)`: that finds a statement by hashing its whole SQL text
/// on every call, and a chunk's text is long (a 32-row message INSERT is ~1,600 characters):
/// ~3,800 instructions a lookup in callgrind, two to four lookups per message transaction
/// (issue 32 part 11). Here a lookup is an array index. Only the store's thread touches it,
/// under `Store.lock`, like every statement.
final class HeldShapes {
    /// What a statement inserts; each kind has `RowBatch`'s chunk sizes.
    enum Kind: Int, CaseIterable {
        case outgoingMessage, incomingMessage, body, event

        /// The SQL of every chunk size of this kind, by log2 of the size.
        var shapes: [String] {
            switch self {
            case .outgoingMessage: Store.outgoingInsertShapes
            case .incomingMessage: Store.incomingInsertShapes
            case .body: Store.bodyInsertShapes
            case .event: Store.eventInsertShapes
            }
        }
    }

    /// Chunk sizes per kind: 1, 2, 4 ... `RowBatch.maxRows`.
    static let sizesPerKind = RowBatch.maxRows.trailingZeroBitCount + 1

    private var statements: [Statement?] = Array(repeating: nil, count: Kind.allCases.count * sizesPerKind)

    /// Every kind's every chunk size, prepared now (the store's first write, at open): a
    /// daemon compiles each of them once in its life anyway, ~30,000 instructions a shape
    /// (24 shapes, a fraction of a millisecond), and compiling them at the first batch that
    /// needs one put that one-time cost inside the message path (issue 32 part 11).
    func prepareAll(_ db: Database) throws {
        for kind in Kind.allCases {
            var rows = 1
            while rows <= RowBatch.maxRows {
                _ = try statement(db, kind, rows: rows)
                rows *= 2
            }
        }
    }

    /// The statement inserting `rows` rows of `kind` (a power of two up to `RowBatch.maxRows`).
    func statement(_ db: Database, _ kind: Kind, rows: Int) throws -> Statement {
        precondition(rows > 0 && rows <= RowBatch.maxRows && rows & (rows - 1) == 0, "not a chunk size: \(rows)")
        let index = kind.rawValue * Self.sizesPerKind + rows.trailingZeroBitCount
        if let statement = statements[index] { return statement }
        let statement = try db.makeStatement(sql: RowBatch.shape(kind.shapes, rows: rows))
        statements[index] = statement
        return statement
    }
}

extension Store {
    /// `HeldShapes.statement` of this connection; inside a write, under `lock`.
    func heldShape(_ db: Database, _ kind: HeldShapes.Kind, rows: Int) throws -> Statement {
        try transactionStatements(db).shapes.statement(db, kind, rows: rows)
    }
}
