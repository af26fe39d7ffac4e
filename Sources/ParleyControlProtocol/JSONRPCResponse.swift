/// A JSON-RPC 2.0 response: exactly one of `result` or `error`. `id` is nil (encoded as
/// `null`) only when the request's id could not be read (parse error, invalid request) or
/// when the daemon reports a connection-level failure (`lineTooLong`, `tooManyClients`,
/// idle `timeout`) just before closing.
public struct JSONRPCResponse: Sendable, Hashable {
    public enum Outcome: Sendable, Hashable {
        case result(JSONValue)
        case error(JSONRPCError)
    }

    public var id: JSONRPCID?
    public var outcome: Outcome

    public init(id: JSONRPCID?, result: JSONValue) {
        self.id = id
        self.outcome = .result(result)
    }

    public init(id: JSONRPCID?, error: JSONRPCError) {
        self.id = id
        self.outcome = .error(error)
    }

    /// A success carrying a typed result. Encoding a result struct only fails for values
    /// JSON cannot hold (none of the protocol types has any); if it happens anyway the
    /// client gets `internalError` instead of a malformed line.
    public static func success<R: Encodable>(id: JSONRPCID?, result: R) -> JSONRPCResponse {
        do {
            return JSONRPCResponse(id: id, result: try JSONValue(encoding: result))
        } catch {
            return JSONRPCResponse(id: id, error: .internalError("cannot encode the result"))
        }
    }

    public var error: JSONRPCError? {
        if case .error(let e) = outcome { return e }
        return nil
    }

    /// The result decoded as `R`, or the response's error thrown.
    public func decodeResult<R: Decodable>(_ type: R.Type) throws -> R {
        switch outcome {
        case .error(let error): throw error
        case .result(let value): return try value.decode(as: R.self)
        }
    }
}

extension JSONRPCResponse: Codable {
    enum CodingKeys: String, CodingKey {
        case jsonrpc, id, result, error
    }

    /// Decoding applies exactly the rules of `ControlServerMessage.parse`.
    public init(from decoder: Decoder) throws {
        let value = try JSONValue(from: decoder)
        switch ControlServerMessage.validate(value) {
        case .success(.response(let response)): self = response
        case .success(.notification):
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "a notification, not a response"))
        case .failure(let error):
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(JSONRPCVersion.string, forKey: .jsonrpc)
        if let id {
            try container.encode(id, forKey: .id)
        } else {
            try container.encodeNil(forKey: .id)
        }
        switch outcome {
        case .result(let value): try container.encode(value, forKey: .result)
        case .error(let error): try container.encode(error, forKey: .error)
        }
    }
}

/// A successful response encoded straight from its typed result, without building a
/// `JSONValue` tree first: the same bytes `JSONRPCResponse.success(id:result:)` gives with
/// a sorted-keys encoder, at a third of the JSON work. For the daemon's hot paths.
public struct JSONRPCTypedSuccess<Result: Encodable & Sendable>: Encodable, Sendable {
    public var id: JSONRPCID?
    public var result: Result

    public init(id: JSONRPCID?, result: Result) {
        self.id = id
        self.result = result
    }

    enum CodingKeys: String, CodingKey { case jsonrpc, id, result }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(JSONRPCVersion.string, forKey: .jsonrpc)
        if let id { try container.encode(id, forKey: .id) } else { try container.encodeNil(forKey: .id) }
        try container.encode(result, forKey: .result)
    }
}
