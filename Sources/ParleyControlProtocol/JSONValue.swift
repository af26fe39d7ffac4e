import Foundation

/// Any JSON value: lets params, results and error data stay open-ended at the framing
/// layer and be converted to typed structs where a method is known.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// A number without fraction that fits in `Int`.
    case int(Int)
    /// Any other number.
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The members if this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    public var intValue: Int? {
        if case .int(let i) = self { return i }
        return nil
    }

    /// A short name of the kind of value, for error messages.
    public var kindName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

extension JSONValue: Codable {
    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let b = try? container.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? container.decode(Int.self) {
            self = .int(i)
        } else if let d = try? container.decode(Double.self) {
            self = .double(d)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else if let a = try? container.decode([JSONValue].self) {
            self = .array(a)
        } else if let o = try? container.decode([String: JSONValue].self) {
            self = .object(o)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let b): try container.encode(b)
        case .int(let i): try container.encode(i)
        case .double(let d): try container.encode(d)
        case .string(let s): try container.encode(s)
        case .array(let a): try container.encode(a)
        case .object(let o): try container.encode(o)
        }
    }
}

extension JSONValue {
    /// Converts any `Encodable` (a typed params, result or event struct) to a `JSONValue`.
    public init<T: Encodable>(encoding value: T) throws {
        let bytes = try CanonicalJSON.encode(value)
        do {
            self = try JSONTextParser.parse(bytes, maxDepth: Int.max)
        } catch {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "\(error)"))
        }
    }

    /// Parses one JSON text (UTF-8, nested at most `ControlLimits.maxNestingDepth`).
    public init(parsing bytes: [UInt8]) throws(JSONRPCError) {
        self = try ControlJSONText.decode(line: bytes).get()
    }

    /// Converts this value to a typed struct; throws `DecodingError` if it does not fit.
    public func decode<T: Decodable>(as type: T.Type) throws -> T {
        do {
            return try JSONValueDecoder.decode(T.self, from: self)
        } catch is JSONValueDecoderUnsupported {
            return try ControlJSON.decoder().decode(T.self, from: Data(try CanonicalJSON.encode(self)))
        }
    }
}

/// The one JSON configuration used on the wire, so output is byte-stable (sorted keys)
/// and identical in the daemon, the CLI and the tests.
public enum ControlJSON {
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }

    public static func decoder() -> JSONDecoder {
        JSONDecoder()
    }

    /// Encodes `value` as one protocol line: compact JSON followed by `\n`. JSON strings
    /// escape control characters, so the output never contains a raw newline before the end.
    public static func line<T: Encodable>(_ value: T) throws -> [UInt8] {
        var bytes = try CanonicalJSON.encode(value)
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
