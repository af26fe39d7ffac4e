import ParleyControlProtocol
import ParleyWebCore

/// What `parley web` decides from bytes a browser page (or anything on loopback) controls.
///
/// 1. The input as one WebSocket message: `WebRelay.decide` must either forward it
///    unchanged (then it is one line, a valid request, of an allowed method) or answer it
///    with a JSON-RPC error response; never trap.
/// 2. The input cut at NUL bytes into a request's method, path, query, Host, Origin,
///    Sec-Fetch-Site, Sec-Fetch-Mode and X-Parley-Auth: `WebRequestGuard.decide` must never
///    trap, must let nothing through without the right Host, and no upload without the key.
/// 3. The input as a sign-in message, first and second: `WebAuthHandshake` must never
///    trap and never sign in (the fuzzer does not know the secret).
let key = WebSignInKey.random()
let port = 43210

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWebRelay(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []

    for rateAllows in [true, false] {
        // The confirmation window's methods: never a key replacement without a typed number.
        if case .forward(let line) = WebRelay.decide(message: bytes, rateAllows: rateAllows, window: .confirm) {
            guard case .success(let request) = ControlRequestParser.parse(line: line) else {
                preconditionFailure("a forwarded message must be a valid request")
            }
            precondition(WebMethodPolicy.isAllowed(request.method, in: .confirm), "a forwarded method must be allowed")
            precondition(WebMethodPolicy.confirmWindowRefusal(request) == nil, "trust.replace without a safety number")
        }
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
        origin: part(4), fetchSite: part(5), fetchMode: part(6), authHeader: part(7),
        isWebSocketUpgrade: (bytes.first ?? 0) & 1 == 1)
    let decision = WebRequestGuard.decide(facts, port: port, isUploadKey: key.isUploadKey)
    switch decision {
    case .serve, .upgrade, .upload:
        precondition(WebOriginCheck.isAllowedHost(facts.host, port: port), "served to a foreign Host")
        if case .upload(let query) = decision {
            precondition(facts.authHeader.map(key.isUploadKey) == true, "an upload without the key")
            precondition(WebOriginCheck.isAllowedOrigin(facts.origin, port: port), "an upload from another origin")
            // Whatever the query, parsing it never traps and never yields a path.
            if case .success(let upload) = WebUploadRequest.parse(query: query, contentLength: 1) {
                precondition(!upload.name.contains("/") && upload.name != ".." && !upload.name.isEmpty)
            }
        }
    case .receivedFile(let id):
        // A received file only to the signed-in page (its key in the header) on our Host,
        // and only by a transfer id (32 hex digits): never a path.
        precondition(WebOriginCheck.isAllowedHost(facts.host, port: port), "a file served to a foreign Host")
        precondition(facts.authHeader.map(key.isUploadKey) == true, "a received file without the key")
        precondition(id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) },
                     "a received file named by anything but a transfer id")
    case .probe:
        precondition(facts.origin == "null" && facts.path == "/ws", "a probe from anything but a file's page")
    case .refuse:
        break
    }
    if case .upgrade(let window) = decision {
        precondition(
            WebWindow.named(byOrigin: facts.origin, port: port) == window
                && WebWindow.named(byHost: facts.host, port: port) == window,
            "a WebSocket relayed with another window's methods")
    }

    for probeOnly in [false, true] {
        var handshake = WebAuthHandshake(key: key, origin: "http://127.0.0.1:43210", probeOnly: probeOnly)
        for _ in 0..<2 {
            if case .authenticated = handshake.receive(bytes, serverNonce: .random()) {
                preconditionFailure("signed in without the secret")
            }
        }
    }
    return 0
}
