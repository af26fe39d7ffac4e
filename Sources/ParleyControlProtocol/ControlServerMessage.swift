/// One line a client receives from the daemon: a response to one of its requests or a
/// notification from a subscription.
public enum ControlServerMessage: Sendable, Hashable {
    case response(JSONRPCResponse)
    case notification(JSONRPCNotification)

    /// Strict reading of one line from the daemon. Total, like `ControlRequestParser`: a
    /// misbehaving or impostor daemon cannot crash a client.
    public static func parse(line: [UInt8]) -> Result<ControlServerMessage, JSONRPCError> {
        ControlJSONText.decode(line: line).flatMap(validate)
    }

    static func validate(_ value: JSONValue) -> Result<ControlServerMessage, JSONRPCError> {
        guard case .object(let members) = value else {
            return .failure(.invalidRequest("expected a JSON object, got \(value.kindName)"))
        }
        guard members["jsonrpc"] == .string(JSONRPCVersion.string) else {
            return .failure(.invalidRequest("\"jsonrpc\" must be \"2.0\""))
        }
        if members["id"] == nil, case .string(let method)? = members["method"] {
            switch members["params"] {
            case nil: return .success(.notification(JSONRPCNotification(method: method)))
            case .object(let params)?:
                return .success(.notification(JSONRPCNotification(method: method, params: params)))
            case let other?:
                return .failure(.invalidRequest("notification params must be an object, got \(other.kindName)"))
            }
        }
        guard let rawID = members["id"] else {
            return .failure(.invalidRequest("neither a response (no \"id\") nor a notification (no \"method\")"))
        }
        var id: JSONRPCID?
        if rawID != .null {
            guard let parsed = JSONRPCID(rawID) else {
                return .failure(.invalidRequest("\"id\" must be an integer, a string or null"))
            }
            id = parsed
        }
        switch (members["result"], members["error"]) {
        case (let result?, nil):
            return .success(.response(JSONRPCResponse(id: id, result: result)))
        case (nil, let error?):
            guard case .object(let e) = error, case .int(let code)? = e["code"],
                case .string(let message)? = e["message"]
            else {
                return .failure(
                    .invalidRequest("\"error\" must be an object with integer \"code\" and string \"message\""))
            }
            return .success(
                .response(
                    JSONRPCResponse(
                        id: id, error: JSONRPCError(code: code, message: message, data: e["data"]))))
        default:
            return .failure(.invalidRequest("a response has exactly one of \"result\" and \"error\""))
        }
    }
}
