/// Short, client-facing wording for why params did not decode (`invalidParams` messages).
enum DecodingErrorDescription {
    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, let context):
            return "missing field \(path(context.codingPath + [key]))"
        case .typeMismatch(let type, let context):
            return "field \(path(context.codingPath)) must be \(typeName(type))"
        case .valueNotFound(let type, let context):
            return "field \(path(context.codingPath)) must be \(typeName(type)), not null"
        case .dataCorrupted(let context):
            return "field \(path(context.codingPath)): \(context.debugDescription)"
        @unknown default:
            return "params do not match the method"
        }
    }

    static func path(_ keys: [CodingKey]) -> String {
        let joined = keys.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        return JSONRPCError.quoted(joined.isEmpty ? "params" : joined)
    }

    static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type: return "an integer"
        case is Bool.Type: return "a boolean"
        case is Double.Type: return "a number"
        default: return "of type \(type)"
        }
    }
}
