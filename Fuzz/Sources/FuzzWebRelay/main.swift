import ParleyControlProtocol
import ParleyWebCore

/// What `parley web` decides from bytes a browser page (or anything on loopback) controls.
///
/// 1. The input as one WebSocket message: `WebRelay.decide` must either forward it
///    unchanged (then it is one line, a valid request, of an allowed method) or answer it
///    with a JSON-RPC error response; never trap.
/// 2. The input cut at NUL bytes into a request's method, path, query, Host, Origin,
///    Sec-Fetch-Site, Sec-Fetch-Mode and Cookie: `WebRequestGuard.decide` must never trap,
///    and must let nothing through (a page, an upgrade) without the right Host and the
///    session cookie.
let session = WebSecret.random()
let port = 43210

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebRelay(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    for rateAllows in [true, false] {
        switch WebRelay.decide(message: bytes, rateAllows: rateAllows) {
        case .forward(let line):
            precondition(line == bytes, "a forwarded message must be the page's bytes, unchanged")
            precondition(!line.contains(0x0A) && !line.contains(0x0D), "a forwarded message is one line")
            guard case .success(let request) = ControlRequestParser.parse(line: line) else {
                preconditionFailure("a forwarded message must be a valid request")
            }
            precondition(WebMethodPolicy.isAllowed(request.method), "a forwarded method must be allowed")
            precondition(rateAllows, "nothing is forwarded over the rate")
        case .answer(let line):
            guard case .object(let members)? = try? JSONValue(parsing: line), members["error"] != nil
            else { preconditionFailure("an answer must be a JSON-RPC error response") }
        }
    }

    let parts = bytes.split(separator: 0, maxSplits: 8, omittingEmptySubsequences: false).map {
        Substring(decoding: $0, as: UTF8.self)
    }
    func part(_ i: Int) -> Substring? { i < parts.count && !parts[i].isEmpty ? parts[i] : nil }
    let facts = WebRequestFacts(
        method: part(0).map(String.init) ?? "GET", path: part(1) ?? "/", query: part(2), host: part(3),
        origin: part(4), fetchSite: part(5), fetchMode: part(6), cookieHeader: part(7),
        isWebSocketUpgrade: (bytes.first ?? 0) & 1 == 1)
    let decision = WebRequestGuard.decide(facts, port: port) { session.matches($0) }
    switch decision {
    case .serve, .upgrade, .upload:
        precondition(WebOriginCheck.isAllowedHost(facts.host, port: port), "served to a foreign Host")
        let values = facts.cookieHeader.map(WebCookie.sessionValues(inCookieHeader:)) ?? []
        precondition(values.contains { session.matches($0) }, "served without the session cookie")
        if case .upload(let query) = decision {
            precondition(WebOriginCheck.isAllowedOrigin(facts.origin, port: port), "an upload from another origin")
            // Whatever the query, parsing it never traps and never yields a path.
            if case .success(let upload) = WebUploadRequest.parse(query: query, contentLength: 1) {
                precondition(!upload.name.contains("/") && upload.name != ".." && !upload.name.isEmpty)
            }
        }
    case .redeem, .refuse:
        break
    }
    return 0
}
