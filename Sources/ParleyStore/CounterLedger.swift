import GRDB

/// The message path's counters (the columns of the one row of `message_counter`) as the
/// open write transaction changes them: deltas gathered in memory and written by ONE
/// single-row UPDATE just before the transaction's `COMMIT` (`flushStatementSQL`), and their
/// committed values remembered between transactions (read with one SELECT of the row after
/// an open or a rollback), so reserving sequence numbers or journal ids reads nothing.
///
/// Why (issue 32 part 9): one message in flight, each `UPDATE counter` of a row per counter
/// cost ~5,500 instructions in SQLite (~7,000 with the statement cache) and each read ~4,000;
/// the sender ran five updates and two reads per message, the receiver two and one.
///
/// Rollback: the deltas are only in memory until the flush, and the flush runs inside the
/// transaction, so a transaction that fails — before or after its flush, or at `COMMIT` —
/// is undone by SQLite and `rolledBack()` forgets its deltas and every remembered value
/// (the next transaction reads them again). A remembered value only moves in
/// `committed()`, after `COMMIT` succeeded. The store's connection holds the database
/// exclusively and every write of the row goes through this ledger, so nothing else can
/// move a remembered value. No store transaction uses a savepoint (a savepoint rolled back
/// inside a transaction that goes on would have to take its deltas back too). Pure
/// bookkeeping; the store holds it under its lock.
struct CounterLedger {
    /// The counters the ledger keeps: the columns of `message_counter`.
    enum Name: Int, CaseIterable {
        case lastEventID, lastSequence, delivered, queued, received

        /// The column (the name the counter had as a row of `counter`).
        var column: String {
            switch self {
            case .lastEventID: Schema.Counter.lastEventID
            case .lastSequence: Schema.Counter.lastSequence
            case .delivered: Schema.Counter.delivered
            case .queued: Schema.Counter.queued
            case .received: Schema.Counter.received
            }
        }
    }

    /// Adds each pending delta (`?1`...`?5`, in `Name` order) to its column of the one row.
    static let flushStatementSQL: String = {
        let sets = Name.allCases.map { "\($0.column) = \($0.column) + ?\($0.rawValue + 1)" }.joined(separator: ", ")
        return "UPDATE \(Schema.messageCounterTable) SET \(sets) WHERE id = 1"
    }()

    /// Every counter's stored value, in `Name` order.
    static let readStatementSQL =
        "SELECT \(Name.allCases.map(\.column).joined(separator: ", ")) FROM \(Schema.messageCounterTable) WHERE id = 1"

    private var pending: [Int64] = Array(repeating: 0, count: Name.allCases.count)
    private var known: [Int64?] = Array(repeating: nil, count: Name.allCases.count)
    /// Whether a transaction is open (between `begin()` and `committed()`/`rolledBack()`).
    private(set) var isOpen = false
    /// Whether any pending delta is not 0.
    private(set) var hasPendingChanges = false

    mutating func begin() {
        resetPending()
        isOpen = true
    }

    mutating func add(_ delta: Int64, to name: Name) {
        guard delta != 0 else { return }
        pending[name.rawValue] += delta
        hasPendingChanges = true
    }

    /// The counter's value inside the open transaction, nil when its committed value is not
    /// remembered (then read the row, which still holds the committed value, and `learn` it).
    func value(_ name: Name) -> Int64? {
        known[name.rawValue].map { $0 + pending[name.rawValue] }
    }

    /// The committed value read from the row inside the open transaction (before the flush).
    mutating func learn(_ committedValue: Int64, for name: Name) {
        known[name.rawValue] = committedValue
    }

    /// The flush statement's arguments, one delta per `Name`.
    var flushArguments: [DirectValue] { pending.map { .int($0) } }

    /// After a successful `COMMIT`: remembered values move by what was committed.
    mutating func committed() {
        for k in known.indices { known[k] = known[k].map { $0 + pending[k] } }
        resetPending()
        isOpen = false
    }

    /// After a failed transaction (rolled back by the store or by SQLite): nothing of it
    /// stays, and nothing remembered is trusted.
    mutating func rolledBack() {
        known = Array(repeating: nil, count: Name.allCases.count)
        resetPending()
        isOpen = false
    }

    private mutating func resetPending() {
        guard hasPendingChanges else { return }
        for k in pending.indices { pending[k] = 0 }
        hasPendingChanges = false
    }
}
