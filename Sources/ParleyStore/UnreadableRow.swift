import Foundation

/// A stored row a read could not turn back into its record (a damaged file, a value no
/// version of parleyd writes). Every read of a table of many rows leaves it out and goes on
/// with the other rows (`Store.decodeRows`), and says which it left out, so one damaged row
/// never takes the person's whole conversation, search, outbox or start with it; the store
/// tells its `UnreadableRowLog` (the daemon logs each row once) and a read whose API has a
/// place for it returns it (`HistoryPage.unreadable`, `SearchResults.unreadable`). A failure
/// of the read itself (SQLite cannot read the page) still fails the whole read.
public struct UnreadableRow: Sendable, Hashable, CustomStringConvertible {
    /// The table the row is in, and its row id (a message's is its control cursor).
    public var table: String
    public var rowID: Int64
    /// What was wrong with it: the column and why, never the row's content.
    public var problem: String

    public init(table: String, rowID: Int64, problem: String) {
        self.table = table
        self.rowID = rowID
        self.problem = problem
    }

    public var description: String { "\(table) row \(rowID): \(problem)" }
}

/// Where the store tells of the damaged rows its reads left out: each (table, row) once per
/// run, however often it is read again (the outbox pump reads a damaged queued row on every
/// pump, room sync at every summary), so the log names each damaged row without filling up.
/// The daemon sets `report` (its logger); without it the rows are only counted.
public final class UnreadableRowLog: @unchecked Sendable {
    /// How many distinct rows are remembered (and reported one by one): a damaged file can
    /// hold millions of bad rows, and this set must not grow with it. Past it, further rows
    /// are counted and not reported one by one.
    public static let maximumRemembered = 10_000

    private let lock = NSLock()
    /// Guarded by `lock`.
    private var seen: Set<RowKey> = []
    private var handler: (@Sendable (UnreadableRow) -> Void)?
    private var skipped = 0

    private struct RowKey: Hashable {
        var table: String
        var rowID: Int64
    }

    public init() {}

    /// Sets who hears of each damaged row (the daemon's log), once per row.
    public func report(to handler: @escaping @Sendable (UnreadableRow) -> Void) {
        lock.withLock { self.handler = handler }
    }

    /// Every time a read left a row out, reported or not (for tests and `parley status`).
    public var skippedReads: Int { lock.withLock { skipped } }

    /// How many distinct damaged rows were found this run (at most `maximumRemembered`).
    public var distinctRows: Int { lock.withLock { seen.count } }

    /// Called by the store's reads for the rows they left out.
    func note(_ rows: [UnreadableRow]) {
        guard !rows.isEmpty else { return }
        var fresh: [UnreadableRow] = []
        let handler: (@Sendable (UnreadableRow) -> Void)? = lock.withLock {
            skipped += rows.count
            for row in rows where seen.count < Self.maximumRemembered {
                if seen.insert(RowKey(table: row.table, rowID: row.rowID)).inserted { fresh.append(row) }
            }
            return self.handler
        }
        // Outside the lock: the handler may log (and a log may be slow).
        if let handler { for row in fresh { handler(row) } }
    }
}
