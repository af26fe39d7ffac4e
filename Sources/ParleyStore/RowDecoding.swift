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
