import Foundation
import GRDB

/// A stored value outside what the schema's CHECK constraints allow: only a damaged or
/// hand-edited file can produce it. Translated to `StoreError.corrupt`.
struct UnexpectedStoredValue: Error, CustomStringConvertible {
    let column: String
    let value: String
    var description: String { "unexpected value \(value.debugDescription) in column \(column)" }
}

/// Throwing accessors: GRDB's plain subscripts trap on a NULL or mistyped value, and a
/// damaged file must give an error, not a crash.
extension Row {
    func int64(_ index: Int) throws -> Int64 {
        try decode(Int64.self, atIndex: index)
    }

    func optionalInt64(_ index: Int) throws -> Int64? {
        try decode(Int64?.self, atIndex: index)
    }

    func text(_ index: Int) throws -> String {
        try decode(String.self, atIndex: index)
    }

    func optionalText(_ index: Int) throws -> String? {
        try decode(String?.self, atIndex: index)
    }

    /// A BLOB column as bytes; SQLite hands back an empty blob as NULL.
    func bytes(_ index: Int) throws -> [UInt8] {
        try withUnsafeData(atIndex: index) { data in data.map { [UInt8]($0) } ?? [] }
    }

    /// A BLOB column as bytes, nil for NULL.
    func optionalBytes(_ index: Int) throws -> [UInt8]? {
        try withUnsafeData(atIndex: index) { data in data.map { [UInt8]($0) } }
    }

    /// A BLOB column holding UTF-8 text (message bodies).
    func utf8Blob(_ index: Int) throws -> String {
        try withUnsafeData(atIndex: index) { data in
            data.map { String(decoding: $0, as: UTF8.self) } ?? ""
        }
    }

    func enumeration<Value: RawRepresentable>(_ type: Value.Type, _ index: Int, column: String) throws -> Value
    where Value.RawValue == String {
        let raw = try text(index)
        guard let value = Value(rawValue: raw) else {
            throw UnexpectedStoredValue(column: column, value: raw)
        }
        return value
    }
}

/// What one read of a table of many rows gave: the rows that decoded, in the read's order,
/// and the ones that did not (`UnreadableRow`), left out.
public struct DecodedRows<Record> {
    public var records: [Record]
    public var unreadable: [UnreadableRow]

    public init(records: [Record] = [], unreadable: [UnreadableRow] = []) {
        self.records = records
        self.unreadable = unreadable
    }
}

extension DecodedRows: Sendable where Record: Sendable {}
extension DecodedRows: Equatable where Record: Equatable {}

extension Store {
    /// How many damaged rows one read steps over to fill its page (`decodeRows`' `keep`):
    /// a read with a LIMIT asks SQLite for this many rows more, so a page whose first rows
    /// are damaged still returns the good rows after them (an outbox page of damaged rows
    /// alone would stall every later message to that peer). Bounded: the extra rows are
    /// only stepped over, never kept, and a file damaged further than this is read a page
    /// at a time like any other.
    public static let unreadableRowsSteppedOverPerRead = 64

    /// The one decoder of many rows: each row of `statement` through `decode`; a row that
    /// does not decode (a NULL or mistyped column, `UnexpectedStoredValue`) is left out,
    /// named in `unreadable` and told to `unreadableRows` (the daemon logs it once). An
    /// error of the read itself (`DatabaseError`: SQLite could not read the page) still
    /// fails the whole read. With `keep`, stops once that many rows decoded. `rowIDColumn`:
    /// where the row's id is, to name it (the table's INTEGER PRIMARY KEY, or a rowid).
    func decodeRows<Record>(
        _ statement: Statement, _ arguments: StatementArguments, table: String, rowIDColumn: Int = 0,
        keep: Int? = nil, _ decode: (Row) throws -> Record
    ) throws -> DecodedRows<Record> {
        var result = DecodedRows<Record>()
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            if let keep, result.records.count >= keep { break }
            do {
                result.records.append(try decode(row))
            } catch let error as DatabaseError {
                throw error
            } catch {
                result.unreadable.append(Self.unreadable(row, table: table, rowIDColumn: rowIDColumn, error))
            }
        }
        unreadableRows.note(result.unreadable)
        return result
    }

    /// The `UnreadableRow` for `row`, which failed to decode with `error`: only what is
    /// wrong, never the row (a decoding error of GRDB's prints the row's values, a
    /// message's body among them, and this goes to the log).
    static func unreadable(_ row: Row, table: String, rowIDColumn: Int, _ error: any Error) -> UnreadableRow {
        let rowID = (try? row.decode(Int64.self, atIndex: rowIDColumn)) ?? 0
        let problem =
            (error as? UnexpectedStoredValue)?.description
            ?? (error as? StoreError).map { _ in "a stored key or id is not of its form" }
            ?? "a column is NULL or of the wrong type (\(type(of: error)))"
        return UnreadableRow(table: table, rowID: rowID, problem: problem)
    }
}
