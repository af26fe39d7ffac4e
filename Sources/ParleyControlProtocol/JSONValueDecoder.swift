import Foundation

/// Decodes a typed struct straight from a parsed `JSONValue`, raising the same
/// `DecodingError`s as Foundation's `JSONDecoder` would on the same JSON text (so
/// `invalidParams` messages read the same). It replaces "encode the tree back to text,
/// then decode the text", which cost a 64 KiB message body a second escape and parse.
///
/// Types with Foundation-specific strategies (`Date`, `Data`, `URL`, `Decimal`) are left
/// to Foundation: `JSONValue.decode(as:)` falls back to the text round trip for them.
struct JSONValueDecoder: Decoder {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func decode<T: Decodable>(_ type: T.Type, from value: JSONValue) throws -> T {
        try JSONValueDecoder(value: value, codingPath: []).decodeValue(type)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            if value == .null { throw Scalars.notFound([String: Any].self, codingPath) }
            throw mismatch([String: Any].self, codingPath, value)
        }
        return KeyedDecodingContainer(JSONValueKeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = value else {
            if value == .null { throw Scalars.notFound([Any].self, codingPath) }
            throw mismatch([Any].self, codingPath, value)
        }
        return JSONValueUnkeyedContainer(items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        JSONValueSingleContainer(value: value, codingPath: codingPath)
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if type == Date.self || type == Data.self || type == URL.self || type == Decimal.self {
            throw JSONValueDecoderUnsupported()
        }
        switch type {
        case is String.Type: return try Scalars.string(value, codingPath) as! T
        case is Int.Type: return try Scalars.int(value, codingPath) as! T
        case is Bool.Type: return try Scalars.bool(value, codingPath) as! T
        default: return try T(from: self)
        }
    }
}

/// Raised for types whose Foundation decoding has special strategies.
struct JSONValueDecoderUnsupported: Error {}

private func mismatch(_ type: Any.Type, _ path: [any CodingKey], _ found: JSONValue) -> DecodingError {
    .typeMismatch(
        type,
        DecodingError.Context(
            codingPath: path, debugDescription: "Expected to decode \(type) but found \(found.kindName) instead."))
}

/// The scalar conversions, with Foundation's errors: `null` is `valueNotFound`, another
/// kind is `typeMismatch`, a number that is not an exact `Int` is `dataCorrupted`.
private enum Scalars {
    static func string(_ v: JSONValue, _ path: [any CodingKey]) throws -> String {
        if case .string(let s) = v { return s }
        throw v == .null ? notFound(String.self, path) : mismatch(String.self, path, v)
    }

    static func bool(_ v: JSONValue, _ path: [any CodingKey]) throws -> Bool {
        if case .bool(let b) = v { return b }
        throw v == .null ? notFound(Bool.self, path) : mismatch(Bool.self, path, v)
    }

    static func int(_ v: JSONValue, _ path: [any CodingKey]) throws -> Int {
        switch v {
        case .int(let i): return i
        case .double(let d):
            if let i = Int(exactly: d) { return i }
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path, debugDescription: "Parsed JSON number <\(d)> does not fit in Int."))
        case .null: throw notFound(Int.self, path)
        default: throw mismatch(Int.self, path, v)
        }
    }

    static func double(_ v: JSONValue, _ path: [any CodingKey]) throws -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .null: throw notFound(Double.self, path)
        default: throw mismatch(Double.self, path, v)
        }
    }

    static func fixedWidth<I: FixedWidthInteger>(_ type: I.Type, _ v: JSONValue, _ path: [any CodingKey]) throws -> I {
        let wide = try int(v, path)
        guard let narrow = I(exactly: wide) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: path, debugDescription: "Parsed JSON number <\(wide)> does not fit in \(I.self)."))
        }
        return narrow
    }

    static func notFound(_ type: Any.Type, _ path: [any CodingKey]) -> DecodingError {
        .valueNotFound(
            type,
            DecodingError.Context(codingPath: path, debugDescription: "Cannot get \(type) -- found null value instead"))
    }
}

private struct JSONValueKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func value(_ key: Key) throws -> JSONValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath, debugDescription: "No value associated with key \(key.stringValue)."))
        }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try Scalars.bool(try value(key), codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try Scalars.string(try value(key), codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        try Scalars.double(try value(key), codingPath + [key])
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float {
        Float(try Scalars.double(try value(key), codingPath + [key]))
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try Scalars.int(try value(key), codingPath + [key]) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 {
        try Scalars.fixedWidth(type, try value(key), codingPath + [key])
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try JSONValueDecoder(value: try value(key), codingPath: codingPath + [key]).decodeValue(type)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws
        -> KeyedDecodingContainer<NestedKey>
    {
        try JSONValueDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try JSONValueDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { throw JSONValueDecoderUnsupported() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw JSONValueDecoderUnsupported() }
}

private struct JSONValueUnkeyedContainer: UnkeyedDecodingContainer {
    let items: [JSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(items: [JSONValue], codingPath: [any CodingKey]) {
        self.items = items
        self.codingPath = codingPath
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    private struct IndexKey: CodingKey {
        let intValue: Int?
        var stringValue: String { "Index \(intValue ?? 0)" }
        init(_ i: Int) { intValue = i }
        init?(stringValue: String) { return nil }
        init?(intValue: Int) { self.intValue = intValue }
    }

    private mutating func next(_ type: Any.Type) throws -> (JSONValue, [any CodingKey]) {
        let path = codingPath + [IndexKey(currentIndex)]
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(codingPath: path, debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return (items[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { return false }
        if items[currentIndex] == .null {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, path) = try next(type)
        return try JSONValueDecoder(value: v, codingPath: path).decodeValue(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<
        NestedKey
    > {
        let (v, path) = try next([String: Any].self)
        return try JSONValueDecoder(value: v, codingPath: path).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, path) = try next([Any].self)
        return try JSONValueDecoder(value: v, codingPath: path).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { throw JSONValueDecoderUnsupported() }
}

private struct JSONValueSingleContainer: SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try Scalars.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try Scalars.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try Scalars.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { Float(try Scalars.double(value, codingPath)) }
    func decode(_ type: Int.Type) throws -> Int { try Scalars.int(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try Scalars.fixedWidth(type, value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try Scalars.fixedWidth(type, value, codingPath) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoder(value: value, codingPath: codingPath).decodeValue(type)
    }
}
