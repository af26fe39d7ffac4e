/// The `error` member of a JSON-RPC 2.0 response. `code` is an `Int` rather than a
/// `ControlErrorCode` so a client can still report codes it does not know.
public struct JSONRPCError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var data: JSONValue?

    public init(code: Int, message: String, data: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.data = data
    }

    public init(_ code: ControlErrorCode, _ message: String, data: JSONValue? = nil) {
        self.init(code: code.rawValue, message: message, data: data)
    }

    /// An error whose `data` is a typed payload (see ControlErrorData.swift). If the
    /// payload cannot be encoded (it always can: the payloads hold only strings and
    /// integers) the error is returned without data rather than not at all.
    public init<D: Encodable>(_ code: ControlErrorCode, _ message: String, payload: D) {
        self.init(code, message, data: try? JSONValue(encoding: payload))
    }

    /// The known code, or nil for a code this version does not define.
    public var knownCode: ControlErrorCode? { ControlErrorCode(rawValue: code) }

    public var description: String { "\(message) (code \(code))" }

    /// Decodes `data` as a typed payload; nil if absent or of another shape.
    public func payload<D: Decodable>(as type: D.Type) -> D? {
        guard let data else { return nil }
        return try? data.decode(as: D.self)
    }
}

extension JSONRPCError {
    /// Longest fragment of client input quoted back in an error message, so a hostile
    /// client cannot make the daemon echo megabytes.
    static let maxQuotedInput = 64

    static func quoted(_ text: String) -> String {
        let cut = text.count > maxQuotedInput ? String(text.prefix(maxQuotedInput)) + "…" : text
        return "\"\(cut)\""
    }

    public static func parseError(_ detail: String) -> JSONRPCError {
        JSONRPCError(.parseError, "parse error: \(detail)")
    }

    public static func invalidRequest(_ detail: String) -> JSONRPCError {
        JSONRPCError(.invalidRequest, "invalid request: \(detail)")
    }

    public static func methodNotFound(_ method: String) -> JSONRPCError {
        JSONRPCError(.methodNotFound, "method not found: \(quoted(method))")
    }

    public static func invalidParams(_ detail: String) -> JSONRPCError {
        JSONRPCError(.invalidParams, "invalid params: \(detail)")
    }

    public static func internalError(_ detail: String) -> JSONRPCError {
        JSONRPCError(.internalError, "internal error: \(detail)")
    }

    public static func lineTooLong() -> JSONRPCError {
        JSONRPCError(
            .lineTooLong,
            "line longer than \(ControlLimits.maxLineBytes) bytes; closing the connection")
    }

    public static func tooManyClients() -> JSONRPCError {
        JSONRPCError(
            .tooManyClients,
            "too many control clients (\(ControlLimits.maxClients)); close some and retry")
    }

    public static func idleTimeout() -> JSONRPCError {
        JSONRPCError(
            .timeout,
            "no complete line within \(ControlLimits.idleLineTimeoutSeconds) s; closing the connection")
    }

    public static func peerNotFound(_ selector: String) -> JSONRPCError {
        JSONRPCError(.peerNotFound, "no peer matches \(quoted(selector))")
    }

    public static func peerAmbiguous(_ selector: String, candidates: [PeerCandidate]) -> JSONRPCError {
        JSONRPCError(
            .peerAmbiguous, "\(quoted(selector)) matches \(candidates.count) peers",
            payload: PeerAmbiguousData(candidates: candidates))
    }

    public static func bodyTooLarge(bytes: Int, maxBytes: Int) -> JSONRPCError {
        JSONRPCError(
            .bodyTooLarge, "message body is \(bytes) bytes; the limit is \(maxBytes)",
            payload: BodyTooLargeData(bytes: bytes, maxBytes: maxBytes))
    }

    public static func eventsExpired(since: Int, prunedThrough: Int, lastEventId: Int) -> JSONRPCError {
        JSONRPCError(
            .eventsExpired,
            "events after \(since) are no longer kept (the journal keeps those after \(prunedThrough)); "
                + "catch up with messages.list, then subscribe again",
            payload: EventsExpiredData(prunedThrough: prunedThrough, lastEventId: lastEventId))
    }

    public static func connectTimeout(address: String, timeoutMs: Int) -> JSONRPCError {
        JSONRPCError(.timeout, "no session with \(quoted(address)) within \(timeoutMs) ms; parleyd keeps dialling it")
    }

    public static func sendTimeout(id: String, timeoutMs: Int) -> JSONRPCError {
        JSONRPCError(
            .timeout, "not delivered within \(timeoutMs) ms; the message stays queued",
            payload: SendTimeoutData(id: id))
    }
}
