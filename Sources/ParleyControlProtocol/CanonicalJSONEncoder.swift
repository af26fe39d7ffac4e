import Foundation

/// Encodes any `Encodable` to the control protocol's canonical JSON: compact, object keys
/// sorted by their UTF-8 bytes, `/` not escaped. The bytes are exactly those of Foundation's
/// `JSONEncoder` with `[.sortedKeys, .withoutEscapingSlashes]` (`ControlJSON.encoder()`),
/// which the tests check value by value; it exists because that encoder builds, boxes and
/// re-sorts a tree through generic `Codable` machinery and was the daemon's main CPU cost
/// per message (docs/BENCHMARKS.md, "Where the time goes").
///
/// Types whose Foundation encoding has special strategies (`Double`, `Float`, `Date`,
/// `Data`, `URL`, `Decimal`) are not re-implemented: a value containing one is handed to
/// Foundation's encoder instead, so the output is the same either way.
public enum CanonicalJSON {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        try encode(value, appendingTo: &out)
        return out
    }

    /// Appends `value`'s canonical JSON to `out`, which the caller reuses from line to line
    /// (a control connection's output buffer, the journal's line buffer): a type written by
    /// hand goes straight in, without an array of its own that grows and is copied. On a
    /// throw `out` is as it was.
    public static func encode<T: Encodable>(_ value: T, appendingTo out: inout [UInt8]) throws {
        if let writable = value as? any CanonicalJSONWritable {
            writable.writeCanonicalJSON(into: &out)
            return
        }
        do {
            let encoder = CanonicalEncoder(codingPath: [])
            try value.encode(to: encoder)
            guard let node = encoder.node, !encoder.usedUnsupported else { throw CanonicalEncodingUnsupported() }
            node.write(into: &out)
        } catch is CanonicalEncodingUnsupported {
            out.append(contentsOf: try ControlJSON.encoder().encode(value))
        }
    }
}

/// A type on the per-message path that writes its canonical JSON by hand: the generic
/// `Codable` route costs a container, a coding path and an encoder object per nested
/// value. Conformers must write exactly what their `encode(to:)` gives through
/// `ControlJSON.encoder()` (sorted keys); the tests compare the two on random values.
public protocol CanonicalJSONWritable: Encodable {
    func writeCanonicalJSON(into out: inout [UInt8])
}

/// Writes the members of one JSON object, which the caller must give in sorted key order.
public struct CanonicalObjectWriter {
    private var first = true

    public init(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ name: StaticString, _ out: inout [UInt8]) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(UInt8(ascii: "\""))
        Self.append(name, &out)
        // Byte by byte: an array literal here was an allocation per key, and the key put
        // together in a temporary allocation of its size cost more than these appends
        // (callgrind).
        out.append(UInt8(ascii: "\""))
        out.append(UInt8(ascii: ":"))
    }

    private static func append(_ text: StaticString, _ out: inout [UInt8]) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The decimal digits of `value`, without a `String` in between.
    static func appendDecimal(_ value: Int, _ out: inout [UInt8]) {
        // Written backwards on the stack, then appended at once (an append per digit and a
        // reversal of the array's slice cost ~700 instructions an integer). 20 bytes hold
        // Int.min: a sign and 19 digits. The magnitude is unsigned: Int.min has none as an Int.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var magnitude = value.magnitude
            var k = 20
            repeat {
                k -= 1
                digits[k] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                k -= 1
                digits[k] = UInt8(ascii: "-")
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[k..<20]))
        }
    }

    public mutating func string(_ name: StaticString, _ value: String, _ out: inout [UInt8]) {
        key(name, &out)
        CanonicalNode.writeString(value, into: &out)
    }

    public mutating func int(_ name: StaticString, _ value: Int, _ out: inout [UInt8]) {
        key(name, &out)
        Self.appendDecimal(value, &out)
    }

    /// `null` when nil, as the protocol's types encode their optional fields.
    public mutating func int(_ name: StaticString, _ value: Int?, _ out: inout [UInt8]) {
        guard let value else { return null(name, &out) }
        int(name, value, &out)
    }

    public mutating func bool(_ name: StaticString, _ value: Bool, _ out: inout [UInt8]) {
        key(name, &out)
        Self.append(value ? "true" : "false", &out)
    }

    public mutating func null(_ name: StaticString, _ out: inout [UInt8]) {
        key(name, &out)
        Self.append("null", &out)
    }

    public mutating func value(_ name: StaticString, _ value: some CanonicalJSONWritable, _ out: inout [UInt8]) {
        key(name, &out)
        value.writeCanonicalJSON(into: &out)
    }

    public func end(_ out: inout [UInt8]) {
        out.append(UInt8(ascii: "}"))
    }
}

/// Thrown (and caught inside `CanonicalJSON.encode`) when Foundation must do the work.
struct CanonicalEncodingUnsupported: Error {}

/// One encoded value. Objects and arrays are boxes so containers handed out by the
/// encoder can keep adding to them.
enum CanonicalNode {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case string(String)
    case object(CanonicalObject)
    case array(CanonicalArray)
    /// Already canonical JSON text (from a `CanonicalJSONWritable`).
    case raw([UInt8])

    func write(into out: inout [UInt8]) {
        switch self {
        case .raw(let bytes): out.append(contentsOf: bytes)
        case .null: out.append(contentsOf: CanonicalNode.nullBytes)
        case .bool(let b): out.append(contentsOf: b ? CanonicalNode.trueBytes : CanonicalNode.falseBytes)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .uint(let u): out.append(contentsOf: String(u).utf8)
        case .string(let s): CanonicalNode.writeString(s, into: &out)
        case .object(let o): o.write(into: &out)
        case .array(let a): a.write(into: &out)
        }
    }

    private static let nullBytes = Array("null".utf8)
    private static let trueBytes = Array("true".utf8)
    private static let falseBytes = Array("false".utf8)
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// JSON string escaping as Foundation does it: `"` and `\` escaped, the C0 controls as
    /// `\b \f \n \r \t` or `\u00xx`; everything else, `/` and non-ASCII included, as is.
    static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { bytes in
            var runStart = 0
            var i = 0
            let count = bytes.count
            while i < count {
                let byte = bytes[i]
                // One comparison for the common case: printable and not `"` or `\`.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else {
                    i += 1
                    continue
                }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<i]))
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [
                        UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                        hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0x0F)]
                    ])
                }
                i += 1
                runStart = i
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<count]))
        }
        out.append(UInt8(ascii: "\""))
    }
}

final class CanonicalObject {
    /// Kept sorted by key (UTF-8 bytes) as members arrive, so writing needs no sort; a
    /// key set twice keeps its last value, as in Foundation. Members usually arrive in
    /// order or nearly, so the check against the last key is the common case.
    private var members: [(key: String, value: CanonicalNode)] = []

    func set(_ key: String, _ value: CanonicalNode) {
        guard let last = members.last else {
            members.append((key, value))
            return
        }
        if last.key.utf8.lexicographicallyPrecedes(key.utf8) {
            members.append((key, value))
            return
        }
        // Binary search for the first member whose key is not below `key`.
        var low = 0
        var high = members.count
        while low < high {
            let mid = (low + high) / 2
            if members[mid].key.utf8.lexicographicallyPrecedes(key.utf8) { low = mid + 1 } else { high = mid }
        }
        if low < members.count && members[low].key == key {
            members[low].value = value
        } else {
            members.insert((key, value), at: low)
        }
    }

    func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        for (i, member) in members.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            CanonicalNode.writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            member.value.write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }
}

final class CanonicalArray {
    var items: [CanonicalNode] = []

    func write(into out: inout [UInt8]) {
        out.append(UInt8(ascii: "["))
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            item.write(into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }
}

/// The `Encoder` handed to `encode(to:)`. `node` is what was encoded at this level; asking
/// for a keyed container twice returns the same object (Foundation merges them too).
final class CanonicalEncoder: Encoder {
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    var node: CanonicalNode?
    /// Set when something needs Foundation (a superEncoder); the top level then falls back.
    var usedUnsupported = false

    init(codingPath: [any CodingKey]) {
        self.codingPath = codingPath
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        let object: CanonicalObject
        if case .object(let existing)? = node {
            object = existing
        } else {
            object = CanonicalObject()
            node = .object(object)
        }
        return KeyedEncodingContainer(
            CanonicalKeyedContainer<Key>(object: object, encoder: self, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        let array: CanonicalArray
        if case .array(let existing)? = node {
            array = existing
        } else {
            array = CanonicalArray()
            node = .array(array)
        }
        return CanonicalUnkeyedContainer(array: array, encoder: self, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        CanonicalSingleValueContainer(encoder: self)
    }

    /// Encodes a nested value: scalars directly, anything else through its `encode(to:)`.
    func box<T: Encodable>(_ value: T, at path: [any CodingKey]) throws -> CanonicalNode {
        // Metatype comparisons, not `as?` casts: a failed dynamic cast per field per type
        // tried was most of this encoder's cost.
        if T.self == String.self { return .string(Self.reinterpret(value, as: String.self)) }
        if T.self == Int.self { return .int(Int64(Self.reinterpret(value, as: Int.self))) }
        if T.self == Bool.self { return .bool(Self.reinterpret(value, as: Bool.self)) }
        if T.self == Int64.self { return .int(Self.reinterpret(value, as: Int64.self)) }
        if T.self == UInt64.self { return .uint(Self.reinterpret(value, as: UInt64.self)) }
        if T.self == Double.self || T.self == Float.self || T.self == Date.self || T.self == Data.self
            || T.self == URL.self || T.self == Decimal.self
        {
            throw CanonicalEncodingUnsupported()
        }
        if let writable = value as? any CanonicalJSONWritable {
            var bytes: [UInt8] = []
            writable.writeCanonicalJSON(into: &bytes)
            return .raw(bytes)
        }
        let nested = CanonicalEncoder(codingPath: path)
        try value.encode(to: nested)
        if nested.usedUnsupported { throw CanonicalEncodingUnsupported() }
        // A value that encoded nothing is an empty object in Foundation's output.
        return nested.node ?? .object(CanonicalObject())
    }

    /// `value` as `U` when the caller has checked that `T` is `U`.
    private static func reinterpret<T, U>(_ value: T, as type: U.Type) -> U {
        withUnsafePointer(to: value) { $0.withMemoryRebound(to: U.self, capacity: 1) { $0.pointee } }
    }
}

struct CanonicalKeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let object: CanonicalObject
    let encoder: CanonicalEncoder
    let codingPath: [any CodingKey]

    mutating func encodeNil(forKey key: Key) throws { object.set(key.stringValue, .null) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { object.set(key.stringValue, .bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) throws { object.set(key.stringValue, .string(value)) }
    mutating func encode(_ value: Int, forKey key: Key) throws { object.set(key.stringValue, .int(Int64(value))) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { object.set(key.stringValue, .int(value)) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { object.set(key.stringValue, .uint(value)) }
    mutating func encode(_ value: Double, forKey key: Key) throws { throw CanonicalEncodingUnsupported() }
    mutating func encode(_ value: Float, forKey key: Key) throws { throw CanonicalEncodingUnsupported() }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        object.set(key.stringValue, try encoder.box(value, at: codingPath + [key]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = CanonicalObject()
        object.set(key.stringValue, .object(nested))
        return KeyedEncodingContainer(
            CanonicalKeyedContainer<NestedKey>(
                object: nested, encoder: encoder, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = CanonicalArray()
        object.set(key.stringValue, .array(nested))
        return CanonicalUnkeyedContainer(array: nested, encoder: encoder, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder { unsupportedEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { unsupportedEncoder() }

    private func unsupportedEncoder() -> any Encoder {
        encoder.usedUnsupported = true
        return CanonicalEncoder(codingPath: codingPath)
    }
}

struct CanonicalUnkeyedContainer: UnkeyedEncodingContainer {
    let array: CanonicalArray
    let encoder: CanonicalEncoder
    let codingPath: [any CodingKey]
    var count: Int { array.items.count }

    mutating func encodeNil() throws { array.items.append(.null) }
    mutating func encode(_ value: Bool) throws { array.items.append(.bool(value)) }
    mutating func encode(_ value: String) throws { array.items.append(.string(value)) }
    mutating func encode(_ value: Int) throws { array.items.append(.int(Int64(value))) }
    mutating func encode(_ value: Double) throws { throw CanonicalEncodingUnsupported() }
    mutating func encode(_ value: Float) throws { throw CanonicalEncodingUnsupported() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        array.items.append(try encoder.box(value, at: codingPath + [CanonicalIndexKey(count)]))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type)
        -> KeyedEncodingContainer<NestedKey>
    {
        let nested = CanonicalObject()
        let path = codingPath + [CanonicalIndexKey(count)]
        array.items.append(.object(nested))
        return KeyedEncodingContainer(
            CanonicalKeyedContainer<NestedKey>(object: nested, encoder: encoder, codingPath: path))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = CanonicalArray()
        let path = codingPath + [CanonicalIndexKey(count)]
        array.items.append(.array(nested))
        return CanonicalUnkeyedContainer(array: nested, encoder: encoder, codingPath: path)
    }

    mutating func superEncoder() -> any Encoder {
        encoder.usedUnsupported = true
        return CanonicalEncoder(codingPath: codingPath)
    }
}

struct CanonicalSingleValueContainer: SingleValueEncodingContainer {
    let encoder: CanonicalEncoder
    var codingPath: [any CodingKey] { encoder.codingPath }

    mutating func encodeNil() throws { encoder.node = .null }
    mutating func encode(_ value: Bool) throws { encoder.node = .bool(value) }
    mutating func encode(_ value: String) throws { encoder.node = .string(value) }
    mutating func encode(_ value: Int) throws { encoder.node = .int(Int64(value)) }
    mutating func encode(_ value: Int64) throws { encoder.node = .int(value) }
    mutating func encode(_ value: UInt64) throws { encoder.node = .uint(value) }
    mutating func encode(_ value: Double) throws { throw CanonicalEncodingUnsupported() }
    mutating func encode(_ value: Float) throws { throw CanonicalEncodingUnsupported() }

    mutating func encode<T: Encodable>(_ value: T) throws {
        encoder.node = try encoder.box(value, at: codingPath)
    }
}

struct CanonicalIndexKey: CodingKey {
    let intValue: Int?
    var stringValue: String { "Index \(intValue ?? 0)" }
    init(_ index: Int) { intValue = index }
    init?(stringValue: String) { return nil }
    init?(intValue: Int) { self.intValue = intValue }
}
