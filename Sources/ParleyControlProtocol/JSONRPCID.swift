/// A request id: JSON-RPC 2.0 allows a number or a string. Parley accepts integers only
/// for the number form (the spec says ids SHOULD NOT have fractions) and rejects `null`
/// ids (discouraged by the spec; a null id is reserved for answers to unreadable requests).
public enum JSONRPCID: Sendable, Hashable, Codable, CustomStringConvertible {
    case number(Int)
    case string(String)

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let i = try? container.decode(Int.self) {
            self = .number(i)
        } else if let s = try? container.decode(String.self) {
            self = .string(s)
        } else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "id must be an integer or a string")
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .number(let i): try container.encode(i)
        case .string(let s): try container.encode(s)
        }
    }

    /// Reads an id from an already-decoded value; nil if it has another type.
    public init?(_ value: JSONValue) {
        switch value {
        case .int(let i): self = .number(i)
        case .string(let s): self = .string(s)
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .number(let i): return String(i)
        case .string(let s): return "\"\(s)\""
        }
    }
}
