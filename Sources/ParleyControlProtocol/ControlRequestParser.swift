/// Strict reading of one request line (without its `\n`). Total: any bytes give either a
/// request or the error to answer with; it never traps.
///
/// Rules (docs/CONTROL.md, "Requests"): the line is UTF-8 JSON nested at most
/// `ControlLimits.maxNestingDepth`; it is an object (a batch array is `invalidRequest`:
/// Parley does not support batches); `"jsonrpc"` is exactly `"2.0"`; `"method"` is a
/// string; `"id"`, if present, is an integer or a string; `"params"`, if present, is an
/// object (an array is `invalidParams`, anything else `invalidRequest`); no other members.
public enum ControlRequestParser {
    public static func parse(line: [UInt8]) -> Result<JSONRPCRequest, JSONRPCError> {
        ControlJSONText.decode(line: line).flatMap(validate)
    }

    /// The id of a line that `parse` rejected, when it can still be read, so the error
    /// response can carry it (JSON-RPC 2.0 requires `null` only when it cannot).
    public static func requestID(inRejectedLine line: [UInt8]) -> JSONRPCID? {
        guard case .success(.object(let members)) = ControlJSONText.decode(line: line),
            let raw = members["id"]
        else { return nil }
        return JSONRPCID(raw)
    }

    static let allowedMembers: Set<String> = ["jsonrpc", "id", "method", "params"]

    static func validate(_ value: JSONValue) -> Result<JSONRPCRequest, JSONRPCError> {
        let members: [String: JSONValue]
        switch value {
        case .object(let m): members = m
        case .array:
            return .failure(.invalidRequest("batch requests (arrays) are not supported; send one object per line"))
        default: return .failure(.invalidRequest("expected a JSON object, got \(value.kindName)"))
        }
        guard members["jsonrpc"] == .string(JSONRPCVersion.string) else {
            return .failure(.invalidRequest("\"jsonrpc\" must be \"2.0\""))
        }
        guard case .string(let method)? = members["method"] else {
            return .failure(.invalidRequest("\"method\" must be a string"))
        }
        var id: JSONRPCID?
        if let rawID = members["id"] {
            guard let parsed = JSONRPCID(rawID) else {
                return .failure(.invalidRequest("\"id\" must be an integer or a string, got \(rawID.kindName)"))
            }
            id = parsed
        }
        var params: [String: JSONValue]?
        switch members["params"] {
        case nil: params = nil
        case .object(let p)?: params = p
        case .array?: return .failure(.invalidParams("params must be an object (by-name), not an array"))
        case let other?: return .failure(.invalidRequest("\"params\" must be an object, got \(other.kindName)"))
        }
        if let extra = members.keys.sorted().first(where: { !allowedMembers.contains($0) }) {
            return .failure(.invalidRequest("unknown member \(JSONRPCError.quoted(extra))"))
        }
        return .success(JSONRPCRequest(id: id, method: method, params: params))
    }
}
