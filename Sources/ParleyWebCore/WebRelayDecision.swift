import ParleyControlProtocol

/// What the relay does with one WebSocket message from the page: forward it to the daemon
/// as one control line, or answer it here with a JSON-RPC error (the same shape the daemon
/// uses, so the page handles both alike). Pure.
public enum WebRelayDecision: Sendable, Equatable {
    case forward([UInt8])
    case answer([UInt8])
}

public enum WebRelay {
    /// Decides for one text message. `rateAllows` is the rate limit's verdict for it.
    ///
    /// The message is parsed with the daemon's own parser (`ControlRequestParser`), so the
    /// method checked here is the method the daemon runs. A line feed or carriage return
    /// anywhere is refused: the daemon reads one request per line, and JSON allows a line
    /// feed as whitespace, so one WebSocket message could otherwise carry a second request
    /// past the method check.
    public static func decide(message: [UInt8], rateAllows: Bool, window: WebWindow = .page) -> WebRelayDecision {
        let id = ControlRequestParser.requestID(inRejectedLine: message)
        guard message.count <= WebLimits.maxWebSocketMessageBytes else {
            return .answer(errorLine(id: nil, .lineTooLong()))
        }
        guard !message.contains(0x0A), !message.contains(0x0D) else {
            return .answer(
                errorLine(id: id, .invalidRequest("one request per message, without line breaks outside strings")))
        }
        let request: JSONRPCRequest
        switch ControlRequestParser.parse(line: message) {
        case .failure(let error): return .answer(errorLine(id: id, error))
        case .success(let parsed): request = parsed
        }
        guard WebMethodPolicy.isAllowed(request.method, in: window) else {
            return .answer(errorLine(id: request.id, WebMethodPolicy.refusal(request.method, in: window)))
        }
        if window == .confirm, let refusal = WebMethodPolicy.confirmWindowRefusal(request) {
            return .answer(errorLine(id: request.id, refusal))
        }
        guard rateAllows else {
            return .answer(
                errorLine(
                    id: request.id,
                    JSONRPCError(
                        .notPermitted,
                        "too many requests from this page (more than \(WebLimits.requestsPerSecond) a second); wait a moment"
                    )))
        }
        return .forward(message)
    }

    static func errorLine(id: JSONRPCID?, _ error: JSONRPCError) -> [UInt8] {
        (try? ControlJSON.line(JSONRPCResponse(id: id, error: error))).map { Array($0.dropLast()) } ?? []
    }
}
