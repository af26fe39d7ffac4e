/// What `parley web` does with one HTTP request, decided from its method, path and headers
/// alone (pure; `WebServer` is the driver). The order of the checks is the order of the
/// threats: a request for another host (DNS rebinding) or from another site is refused
/// before anything else is looked at, then the credential.
public struct WebRequestFacts: Sendable {
    public var method: String
    public var path: Substring
    public var query: Substring?
    public var host: Substring?
    public var origin: Substring?
    public var fetchSite: Substring?
    /// `Sec-Fetch-Mode`: `navigate` for a page the person opens.
    public var fetchMode: Substring?
    public var cookieHeader: Substring?
    public var isWebSocketUpgrade: Bool

    public init(
        method: String, path: Substring, query: Substring? = nil, host: Substring?, origin: Substring? = nil,
        fetchSite: Substring? = nil, fetchMode: Substring? = nil, cookieHeader: Substring? = nil,
        isWebSocketUpgrade: Bool = false
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.host = host
        self.origin = origin
        self.fetchSite = fetchSite
        self.fetchMode = fetchMode
        self.cookieHeader = cookieHeader
        self.isWebSocketUpgrade = isWebSocketUpgrade
    }
}

public enum WebRequestDecision: Sendable, Equatable {
    /// `GET /login?token=…`: exchange the launch token for a session cookie.
    case redeem(token: Substring)
    /// Serve this asset.
    case serve(WebAsset)
    /// Upgrade to the WebSocket relay.
    case upgrade
    /// `POST /upload?…`: stage the body and offer it (`WebUploadRequest`, `WebUploadStaging`).
    case upload(query: Substring?)
    case refuse(WebRefusal)
}

/// Why a request is refused, with its status and the text the person sees.
public enum WebRefusal: Sendable, Equatable {
    case wrongHost
    case crossSite
    case notSignedIn
    case linkUsedOrExpired
    case methodNotAllowed
    case notFound
    case tooManyWebSockets

    public var status: Int {
        switch self {
        case .wrongHost: return 421
        case .crossSite, .notSignedIn, .linkUsedOrExpired: return 403
        case .methodNotAllowed: return 405
        case .notFound: return 404
        case .tooManyWebSockets: return 503
        }
    }

    public var message: String {
        switch self {
        case .wrongHost:
            return "This server answers only to 127.0.0.1 and localhost. Open the URL that `parley web` printed."
        case .crossSite:
            return "Refused: the request came from another site."
        case .notSignedIn:
            return
                "Not signed in. Open the URL that `parley web` printed (each link works once; run `parley web` again for a new one)."
        case .linkUsedOrExpired:
            return
                "This link was already used or has expired (each works once, for 10 minutes). Run `parley web` again for a new one."
        case .methodNotAllowed:
            return
                "Only GET is served here (and POST to /upload from the page); everything else goes over the page's WebSocket."
        case .notFound:
            return "Not found."
        case .tooManyWebSockets:
            return "Too many Parley tabs are open (at most \(WebLimits.maxWebSockets)); close one and reload."
        }
    }
}

public enum WebRequestGuard {
    public static let loginPath = "/login"
    public static let webSocketPath = "/ws"
    public static let uploadPath = "/upload"

    /// Decides. `isSession` says whether a cookie value is a live session.
    public static func decide(
        _ request: WebRequestFacts, port: Int, isSession: (Substring) -> Bool
    ) -> WebRequestDecision {
        guard WebOriginCheck.isAllowedHost(request.host, port: port) else { return .refuse(.wrongHost) }
        // An Origin from elsewhere, or a fetch another site started, is refused on every path.
        if let origin = request.origin, !WebOriginCheck.isAllowedOrigin(origin, port: port) {
            return .refuse(.crossSite)
        }
        // GET and HEAD only, but for the upload: nothing else here changes state over HTTP
        // (the login only swaps a one-time token for a cookie in this process's memory).
        let isUpload = request.path == Substring(uploadPath)
        if isUpload {
            guard request.method == "POST" else { return .refuse(.methodNotAllowed) }
        } else {
            guard request.method == "GET" || request.method == "HEAD" else { return .refuse(.methodNotAllowed) }
        }

        if request.path == Substring(loginPath) {
            // The sign-in link is opened from outside: the terminal, or the open file
            // (file:// is another site to the browser). So a top-level navigation from
            // elsewhere is taken here, but no fetch, frame or image: only the token's
            // secrecy matters, and a page that knew a token could only sign the browser in
            // to the person's own chat.
            guard request.fetchMode == nil || request.fetchMode == "navigate" else { return .refuse(.crossSite) }
            guard let token = queryValue("token", in: request.query) else { return .refuse(.linkUsedOrExpired) }
            return .redeem(token: token)
        }
        guard WebOriginCheck.isAllowedFetchSite(request.fetchSite) else { return .refuse(.crossSite) }

        let signedIn =
            request.cookieHeader.map { header in
                WebCookie.sessionValues(inCookieHeader: header).contains(where: isSession)
            } ?? false
        guard signedIn else { return .refuse(.notSignedIn) }

        if isUpload {
            // A POST is what another site's form can make a browser send (with no cookie,
            // thanks to SameSite=Strict, but the Origin check does not rely on that): the
            // page's own fetch always carries our Origin, so a missing one is refused too.
            guard request.origin != nil else { return .refuse(.crossSite) }
            return .upload(query: request.query)
        }
        if request.path == Substring(webSocketPath) {
            // A WebSocket must say where it comes from: browsers always send Origin on an
            // upgrade, so a missing one is not a browser of ours.
            guard request.isWebSocketUpgrade else { return .refuse(.notFound) }
            guard request.origin != nil else { return .refuse(.crossSite) }
            return .upgrade
        }
        guard let asset = WebAssets.asset(forPath: request.path) else { return .refuse(.notFound) }
        return .serve(asset)
    }

    /// The value of `name` in a query string (`a=1&token=…`); no percent-decoding (a token
    /// is hex).
    static func queryValue(_ name: String, in query: Substring?) -> Substring? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2, parts[0] == Substring(name) { return parts[1] }
        }
        return nil
    }
}
