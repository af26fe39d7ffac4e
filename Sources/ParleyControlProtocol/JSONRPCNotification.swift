/// A JSON-RPC 2.0 notification from the daemon to a subscribed client (no `id`, no
/// response expected). The events and their params are in ControlEvents.swift.
public struct JSONRPCNotification: Sendable, Hashable {
    public var method: String
    public var params: [String: JSONValue]?

    public init(method: String, params: [String: JSONValue]? = nil) {
        self.method = method
        self.params = params
    }

    /// The event's journal id (`params.eventId`), nil if absent (`subscription.closed`).
    public var eventID: Int? {
        if case .int(let id)? = params?[ControlEvent.eventIDKey] { return id }
        return nil
    }

    /// A notification carrying a typed event.
    public init<E: ControlEventParams>(event: E) throws {
        guard case .object(let members) = try JSONValue(encoding: event) else {
            throw JSONRPCError.internalError("\(E.self) does not encode as an object")
        }
        self.init(method: E.method, params: members)
    }
}

extension JSONRPCNotification: Codable {
    enum CodingKeys: String, CodingKey {
        case jsonrpc, method, params
    }

    /// Decoding applies exactly the rules of `ControlServerMessage.parse`.
    public init(from decoder: Decoder) throws {
        let value = try JSONValue(from: decoder)
        switch ControlServerMessage.validate(value) {
        case .success(.notification(let notification)): self = notification
        case .success(.response):
            throw DecodingError.dataCorrupted(
                DecodingError.Context(
                    codingPath: decoder.codingPath, debugDescription: "a response, not a notification"))
        case .failure(let error):
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: error.message))
        }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(JSONRPCVersion.string, forKey: .jsonrpc)
        try container.encode(method, forKey: .method)
        try container.encodeIfPresent(params, forKey: .params)
    }
}
