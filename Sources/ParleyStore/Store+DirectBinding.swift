import GRDB
import GRDBSQLite

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
    case null

    static func optionalText(_ s: String?) -> DirectValue { s.map { .text($0) } ?? .null }
}

extension Statement {
    /// Resets the statement, binds `values` to its parameters 1...n and runs it to the end
    /// (a statement that returns no rows: an INSERT or UPDATE).
    func executeDirect(_ values: [DirectValue]) throws {
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
            }
            guard code == SQLITE_OK else { throw Self.error(code, handle) }
        }
        while true {
            let code = sqlite3_step(handle)
            if code == SQLITE_DONE { break }
            if code == SQLITE_ROW { continue }
            let failure = Self.error(code, handle)
            sqlite3_reset(handle)
            throw failure
        }
        sqlite3_reset(handle)
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
