/// What `parley web` does with one HTTP request, decided from its method, path and headers
/// alone (pure; `WebServer` is the driver). The order of the checks is the order of the
/// threats: a request for another host (DNS rebinding) or from another site is refused
/// before anything else is looked at, then the credential.
///
/// There is no cookie (docs/WEB.md "Signing in"): cookies are not separated by port, so
/// another local user's loopback server could collect one and replay it. The page's files
/// are public (they are in the `parley` binary) and served without a credential; the
/// WebSocket signs in with its first messages (`WebAuthHandshake`), an upload with the
/// `X-Parley-Auth` header (`WebSignInKey.uploadKey`).
public struct WebRequestFacts: Sendable {
    public var method: String
    public var path: Substring
    public var query: Substring?
    public var host: Substring?
    public var origin: Substring?
    public var fetchSite: Substring?
    /// `Sec-Fetch-Mode`: `navigate` for a page the person opens.
    public var fetchMode: Substring?
    /// `X-Parley-Auth`: the upload key (`WebSignInKey.uploadKey`).
    public var authHeader: Substring?
    public var isWebSocketUpgrade: Bool

    public init(
        method: String, path: Substring, query: Substring? = nil, host: Substring?, origin: Substring? = nil,
        fetchSite: Substring? = nil, fetchMode: Substring? = nil, authHeader: Substring? = nil,
        isWebSocketUpgrade: Bool = false
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.host = host
        self.origin = origin
        self.fetchSite = fetchSite
        self.fetchMode = fetchMode
        self.authHeader = authHeader
        self.isWebSocketUpgrade = isWebSocketUpgrade
    }
}

public enum WebRequestDecision: Sendable, Equatable {
    /// Serve this asset.
    case serve(WebAsset)
    /// Upgrade to the WebSocket relay, for this window (its method policy).
    case upgrade(WebWindow)
    /// Upgrade a WebSocket from the sign-in file (`file://`, so `Origin: null`): it may only
    /// ask the server to prove itself (`WebAuthHandshake` in probe mode), never sign in.
    case probe
    /// `POST /upload?…`: stage the body and offer it (`WebUploadRequest`, `WebUploadStaging`).
    case upload(query: Substring?)
    /// `GET /files/ID`: the received file with this transfer id, from the daemon's
    /// `files.open`, as an attachment (`WebReceivedFile`).
    case receivedFile(id: String)
    case refuse(WebRefusal)
}

/// Why a request is refused, with its status and the text the person sees.
public enum WebRefusal: Sendable, Equatable {
    case wrongHost
    case crossSite
    case notSignedIn
    case methodNotAllowed
    case notFound
    case tooManyWebSockets
    case tooManyFileResponses

    public var status: Int {
        switch self {
        case .wrongHost: return 421
        case .crossSite, .notSignedIn: return 403
        case .methodNotAllowed: return 405
        case .notFound: return 404
        case .tooManyWebSockets: return 503
        case .tooManyFileResponses: return 429
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
                "Not signed in. Open the sign-in link that `parley web` printed, or its sign-in file ($XDG_RUNTIME_DIR/parley/web.html)."
        case .methodNotAllowed:
            return
                "Only GET is served here (and POST to /upload from the page); everything else goes over the page's WebSocket."
        case .notFound:
            return "Not found."
        case .tooManyWebSockets:
            return "Too many Parley tabs are open (at most \(WebLimits.maxWebSockets)); close one and reload."
        case .tooManyFileResponses:
            return "Too many files are being fetched at once (at most \(WebLimits.maxConcurrentFileResponses)); "
                + "try again when one is done."
        }
    }
}

public enum WebRequestGuard {
    public static let webSocketPath = "/ws"
    public static let uploadPath = "/upload"
    /// The header an upload's key travels in.
    public static let authHeaderName = "X-Parley-Auth"

    /// Decides. `isUploadKey` says whether an `X-Parley-Auth` value is this run's upload key.
    public static func decide(
        _ request: WebRequestFacts, port: Int, isUploadKey: (Substring) -> Bool
    ) -> WebRequestDecision {
        guard let window = WebWindow.named(byHost: request.host, port: port) else { return .refuse(.wrongHost) }
        // The sign-in file checks the server before it sends the browser there. A page from
        // a file has the origin "null" (as has a sandboxed frame of any site): it gets the
        // server's proof for "null" and nothing else, which is worth nothing to anyone who
        // does not hold this port, and no one else can while this server runs.
        if request.path == Substring(webSocketPath), request.isWebSocketUpgrade, request.method == "GET",
            request.origin == "null"
        {
            return .probe
        }
        // An Origin from elsewhere, or a fetch another site started, is refused on every path.
        // And the two windows never share a request: the page (127.0.0.1) cannot act
        // through the confirmation window's host (localhost), nor the other way round.
        if let origin = request.origin, WebWindow.named(byOrigin: origin, port: port) != window {
            return .refuse(.crossSite)
        }
        // GET and HEAD only, but for the upload: nothing else here changes state over HTTP.
        let isUpload = request.path == Substring(uploadPath) && window == .page
        if isUpload {
            guard request.method == "POST" else { return .refuse(.methodNotAllowed) }
        } else {
            guard request.method == "GET" || request.method == "HEAD" else { return .refuse(.methodNotAllowed) }
        }

        // The page itself is opened from outside: the printed link (the terminal) or the
        // sign-in file (file:// is another site to the browser). A top-level navigation to
        // it is served whatever started it: it is public, carries no credential (the secret
        // is in the fragment, which the browser keeps), and cannot be framed
        // (`frame-ancestors 'none'`). Everything else must come from our own page.
        let isPage = request.path == "/" || request.path == Substring(window.pagePath)
        let isNavigation = request.fetchMode == nil || request.fetchMode == "navigate"
        if !(isPage && isNavigation) {
            guard WebOriginCheck.isAllowedFetchSite(request.fetchSite) else { return .refuse(.crossSite) }
        }

        if isUpload {
            // A POST is what another site's form can make a browser send: the page's own
            // request always carries our Origin, so a missing one is refused too; and the
            // key, which only a page that signed in holds (a custom header, so another
            // site could not send it without a CORS preflight, which is refused).
            guard request.origin != nil else { return .refuse(.crossSite) }
            guard let key = request.authHeader, isUploadKey(key) else { return .refuse(.notSignedIn) }
            return .upload(query: request.query)
        }
        if let id = WebReceivedFile.id(inPath: request.path) {
            // A received file is the person's: only their signed-in page fetches it, with
            // the same key as an upload in a header (which another site's page cannot send
            // without a CORS preflight, refused; and another local user does not have).
            // Never by a link or an <img src>: those cannot carry the header.
            guard request.method == "GET" else { return .refuse(.methodNotAllowed) }
            guard let key = request.authHeader, isUploadKey(key) else { return .refuse(.notSignedIn) }
            return .receivedFile(id: id)
        }
        if request.path == Substring(webSocketPath) {
            // A WebSocket must say where it comes from: browsers always send Origin on an
            // upgrade, so a missing one is not a browser of ours. It signs in with its first
            // messages (`WebAuthHandshake`) before anything is relayed.
            guard request.isWebSocketUpgrade else { return .refuse(.notFound) }
            guard request.origin != nil else { return .refuse(.crossSite) }
            return .upgrade(window)
        }
        let path = request.path == "/" ? Substring(window.pagePath) : request.path
        guard window.assetPaths.contains(String(path)), let asset = WebAssets.asset(forPath: path) else {
            return .refuse(.notFound)
        }
        return .serve(asset)
    }
}
