import GRDB

/// Everything the store can fail with. Each case says what went wrong in words an operator
/// can act on; the path cases name the database file so the message points at the culprit.
public enum StoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file exists but is not a readable Parley database (garbage, truncated, damaged
    /// pages, another program's SQLite file). Never "fixed" by starting a new database.
    case corrupt(path: String, reason: String)
    /// Another connection (normally another parleyd on the same state directory) holds the
    /// database lock.
    case locked(path: String)
    /// The operating system refused a read or write: permissions, missing directory, disk
    /// full, read-only filesystem, I/O error.
    case io(path: String, reason: String)
    /// `close()` was called; the store answers nothing after that.
    case closed(path: String)
    /// The database was written by a newer Parley whose schema this build does not know.
    case unsupportedSchema(path: String, reason: String)
    /// The caller passed something the store refuses to record (malformed hex, NUL in a
    /// name, a value too large for SQLite). Nothing was written.
    case invalidArgument(String)
    /// The thing the caller wanted to change does not exist.
    case notFound(String)
    /// The change contradicts what is already stored (duplicate message id, a key change
    /// already resolved the other way, a reference to an unknown peer). Nothing was written.
    case conflict(String)

    public var description: String {
        switch self {
        case let .corrupt(path, reason):
            return "database \(path) is corrupt or not a Parley database (\(reason)); move it aside to start over"
        case let .locked(path):
            return "database \(path) is locked by another process (is another parleyd using this state directory?)"
        case let .io(path, reason):
            return "cannot access database \(path): \(reason)"
        case let .closed(path):
            return "database \(path) was already closed"
        case let .unsupportedSchema(path, reason):
            return "database \(path) has a schema this version does not support (\(reason)); upgrade parleyd"
        case let .invalidArgument(reason):
            return "store refused invalid input: \(reason)"
        case let .notFound(what):
            return "not found: \(what)"
        case let .conflict(reason):
            return "store conflict: \(reason)"
        }
    }
}

extension StoreError {
    /// Translates whatever GRDB or SQLite threw into a StoreError for the database at `path`.
    /// StoreErrors thrown from inside a transaction closure pass through unchanged.
    static func translating(_ error: any Error, path: String) -> StoreError {
        if let error = error as? StoreError { return error }
        if let error = error as? UnexpectedStoredValue {
            return .corrupt(path: path, reason: error.description)
        }
        if error is RowDecodingError {
            // STRICT tables and CHECK constraints make this impossible for rows we wrote.
            return .corrupt(path: path, reason: "a stored row does not have the expected shape")
        }
        guard let error = error as? DatabaseError else {
            return .io(path: path, reason: String(describing: error))
        }
        let message = error.message ?? "SQLite error \(error.extendedResultCode.rawValue)"
        switch error.resultCode {
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return .corrupt(path: path, reason: message)
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            return .locked(path: path)
        case .SQLITE_CONSTRAINT:
            return .conflict(message)
        case .SQLITE_TOOBIG, .SQLITE_RANGE, .SQLITE_MISMATCH:
            return .invalidArgument(message)
        case .SQLITE_FULL:
            return .io(path: path, reason: "disk full")
        default:
            return .io(path: path, reason: message)
        }
    }
}
