/// A stored row a read could not turn back into its record (a damaged file, a value no
/// version of parleyd writes). A page read leaves it out and goes on with the other rows,
/// and says which it left out, so one damaged message never takes the person's whole
/// conversation (or its export) with it; the caller logs it and tells the client. A
/// failure of the read itself (SQLite cannot read the page) still fails the whole read.
public struct UnreadableRow: Sendable, Hashable, CustomStringConvertible {
    /// The table the row is in, and its row id (a message's is its control cursor).
    public var table: String
    public var rowID: Int64
    /// What was wrong with it.
    public var problem: String

    public init(table: String, rowID: Int64, problem: String) {
        self.table = table
        self.rowID = rowID
        self.problem = problem
    }

    public var description: String { "\(table) row \(rowID): \(problem)" }
}
