/// A JSON-RPC 2.0 request from a control client. Without an `id` it is a notification:
/// the daemon runs it and sends no response.
public struct JSONRPCRequest: Sendable, Hashable {
    public var id: JSONRPCID?
    public var method: String
    /// By-name parameters; Parley does not accept by-position (array) params.
    public var params: [String: JSONValue]?

    public init(id: JSONRPCID?, method: String, params: [String: JSONValue]? = nil) {
        self.id = id
        self.method = method
        self.params = params
    }

    /// A request for a typed call: the method name comes from the params type.
    public init<P: ControlCallParams>(id: JSONRPCID, call params: P) throws {
        guard case .object(let members) = try JSONValue(encoding: params) else {
            throw JSONRPCError.internalError("\(P.self) does not encode as an object")
        }
        self.init(id: id, method: P.method, params: members)
    }

    public var isNotification: Bool { id == nil }

    /// Decodes and validates `params` as `P`. Absent params count as `{}`. Unknown fields
    /// are rejected so a misspelt option (`"wiat": true`) is an error rather than ignored.
    public func decodeParams<P: ControlCallParams>(_ type: P.Type) throws(JSONRPCError) -> P {
        let members = params ?? [:]
        let known = Set(P.fieldNames)
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw .invalidParams("unknown field \(JSONRPCError.quoted(unknown)) for \(P.method)")
        }
        let decoded: P
        do {
            decoded = try JSONValue.object(members).decode(as: P.self)
        } catch let error as DecodingError {
            throw .invalidParams(DecodingErrorDescription.describe(error))
        } catch {
            throw .invalidParams(String(describing: error))
        }
        try decoded.validate()
        return decoded
    }
}

extension JSONRPCRequest: Codable {
    enum CodingKeys: String, CodingKey {
        case jsonrpc, id, method, params
    }

    /// Decoding applies exactly the rules of `ControlRequestParser`.
    public init(from decoder: Decoder) throws {
        let value = try JSONValue(from: decoder)
        switch ControlRequestParser.validate(value) {
        case .success(let request): self = request
        case .failure(let error):
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(JSONRPCVersion.string, forKey: .jsonrpc)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(method, forKey: .method)
        try container.encodeIfPresent(params, forKey: .params)
    }
}

/// The only protocol version: the `"jsonrpc"` member of every object on the wire.
public enum JSONRPCVersion {
    public static let string = "2.0"
}
