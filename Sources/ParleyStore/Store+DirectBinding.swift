import GRDB
import GRDBSQLite
import ParleyCore

/// One parameter of a per-message statement, bound through SQLite's C API.
///
/// GRDB's `StatementArguments` boxes every value in an existential array and binds it
/// through generic code: about 17,000 instructions for the two inserts of one message
/// (callgrind, docs/BENCHMARKS.md). The per-message inserts bind their few parameters and
/// step here instead; the statement still comes from GRDB's cache, on GRDB's connection,
/// inside a transaction `Store.write` opened, and a failure is GRDB's `DatabaseError`
/// with SQLite's extended result code (what callers match on, e.g. a unique constraint).
enum DirectValue {
    case int(Int64)
    case text(String)
    /// Bound as a BLOB: message bodies are UTF-8 BLOBs (GRDB binds TEXT NUL-terminated).
    case utf8Blob(String)
    case blob([UInt8])
    case null

    static func optionalText(_ s: String?) -> DirectValue { s.map { .text($0) } ?? .null }
    static func optionalInt(_ n: Int64?) -> DirectValue { n.map { .int($0) } ?? .null }
    static func optionalBlob(_ b: [UInt8]?) -> DirectValue { b.map { .blob($0) } ?? .null }
}

/// The current result row of a statement stepped by `Statement.queryDirect`.
struct DirectRow {
    fileprivate let handle: OpaquePointer

    func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    func optionalText(_ column: Int32) -> String? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL, let text = sqlite3_column_text(handle, column)
        else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    /// A BLOB column's bytes, nil for NULL.
    func optionalBytes(_ column: Int32) -> [UInt8]? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL, let blob = sqlite3_column_blob(handle, column)
        else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Array(UnsafeRawBufferPointer(start: blob, count: count))
    }

    /// A BLOB column as lowercase hex, nil for NULL.
    func optionalHex(_ column: Int32) -> String? {
        guard sqlite3_column_type(handle, column) != SQLITE_NULL, let blob = sqlite3_column_blob(handle, column)
        else { return nil }
        let count = Int(sqlite3_column_bytes(handle, column))
        return Sodium.hex(Array(UnsafeRawBufferPointer(start: blob, count: count)))
    }
}

extension Statement {
    /// Resets the statement, binds `values` to its parameters 1...n and runs it to the end
    /// (a statement that returns no rows: an INSERT or UPDATE).
    func executeDirect(_ values: [DirectValue]) throws {
        try queryDirect(values) { _ in }
    }

    /// Resets the statement, binds `values` and calls `row` for each result row. `row` must
    /// not use this statement; the statement is reset when this returns.
    func queryDirect(_ values: [DirectValue], _ row: (DirectRow) throws -> Void) throws {
        let handle = sqliteStatement
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let code: Int32
            switch value {
            case .int(let n):
                code = sqlite3_bind_int64(handle, index, n)
            case .null:
                code = sqlite3_bind_null(handle, index)
            case .text(var s):
                code = s.withUTF8 { bytes in
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        return sqlite3_bind_text(handle, index, "", 0, Self.transient)
                    }
                    return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { chars in
                        sqlite3_bind_text(handle, index, chars, Int32(bytes.count), Self.transient)
                    }
                }
            case .utf8Blob(var s):
                code = s.withUTF8 { bytes in
                    // An empty body is still a BLOB (a nil pointer would bind NULL).
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return sqlite3_bind_blob(handle, index, base, Int32(bytes.count), Self.transient)
                }
            case .blob(let b):
                code = b.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress, bytes.count > 0 else {
                        return sqlite3_bind_zeroblob(handle, index, 0)
                    }
                    return sqlite3_bind_blob(handle, index, base, Int32(bytes.count), Self.transient)
                }
            }
            guard code == SQLITE_OK else { throw Self.error(code, handle) }
        }
        defer { sqlite3_reset(handle) }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw Self.error(code, handle) }
            try row(DirectRow(handle: handle))
        }
    }

    private static func error(_ code: Int32, _ handle: OpaquePointer) -> DatabaseError {
        let connection = sqlite3_db_handle(handle)
        let extended = connection.map { sqlite3_extended_errcode($0) } ?? code
        let message = connection.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
        return DatabaseError(
            resultCode: ResultCode(rawValue: extended), message: message,
            sql: sqlite3_sql(handle).map { String(cString: $0) })
    }

    /// SQLite copies the bytes before the bind call returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
