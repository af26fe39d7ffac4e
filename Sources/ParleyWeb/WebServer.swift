import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ParleyControlProtocol
import ParleyWebCore

/// `parley web`'s HTTP and WebSocket server on 127.0.0.1: the driver of the pure decisions
/// (`WebRequestGuard`, `WebSessions`, `WebRelay`). It holds no state of the chat: every
/// WebSocket is relayed to its own connection to the daemon's control socket
/// (`ControlSocketRelay`), with the person's own permissions, so the daemon's attack surface
/// is what it was. docs/WEB.md describes the threats and the answers.
public final class WebServer: Sendable {
    public struct Options: Sendable {
        /// 0: any free port.
        public var port: Int
        public var controlSocketPath: String

        public init(port: Int, controlSocketPath: String) {
            self.port = port
            self.controlSocketPath = controlSocketPath
        }
    }

    struct State: Sendable {
        var sessions = WebSessions()
        var port = 0
        var openWebSockets = 0
    }

    let options: Options
    let state = NIOLockedValueBox(State())
    /// Where uploads are staged, or why uploads cannot work (chat still does).
    let staging: Result<WebUploadStaging, WebUploadError>

    public init(options: Options) {
        self.options = options
        staging = Result { () throws(WebUploadError) in
            try WebUploadStaging(
                root: try WebUploadStaging.defaultRoot(environment: ProcessInfo.processInfo.environment))
        }
    }

    /// A new one-time launch token (for a URL to print or to open).
    public func issueLaunchToken() -> WebSecret {
        state.withLockedValue { $0.sessions.issueLaunchToken(now: WebClock.now()) }
    }

    /// Whether `token` can still be used to sign in.
    public func isUsable(_ token: WebSecret) -> Bool {
        state.withLockedValue { $0.sessions.isUsable(token, now: WebClock.now()) }
    }

    /// The login URL carrying `token`.
    public func loginURL(_ token: WebSecret) -> String {
        "http://127.0.0.1:\(state.withLockedValue { $0.port })\(WebRequestGuard.loginPath)?token=\(token.text)"
    }

    /// Serves until SIGINT or SIGTERM. `onReady` runs once the port is bound, with it.
    public func run(onReady: @escaping @Sendable (Int) async -> Void) async throws {
        var logger = Logger(label: "parley-web")
        logger.logLevel = .warning
        let server = self
        let app = Application(
            responder: CallbackResponder<BasicRequestContext> { request, _ in
                await server.respond(to: request)
            },
            server: .http1WebSocketUpgrade(
                configuration: .init(
                    http1: .init(
                        idleTimeout: .seconds(WebLimits.httpIdleTimeoutSeconds),
                        httpDecoderConfiguration: .init(
                            maxHeaderFieldSize: WebLimits.maxRequestHeaderBytes,
                            maxHeaderListSize: WebLimits.maxRequestHeaderBytes)),
                    ws: .init(maxFrameSize: WebLimits.maxWebSocketMessageBytes))
            ) { head, _, _ in
                server.shouldUpgrade(head)
            },
            configuration: .init(address: .hostname("127.0.0.1", port: options.port), serverName: nil),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                server.state.withLockedValue { $0.port = port }
                await onReady(port)
            },
            logger: logger
        )
        if case .success(let staging) = staging {
            WebStagingJanitor(staging: staging, socketPath: options.controlSocketPath).start()
        }
        try await app.runService()
    }

    static func wallClockMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    // MARK: HTTP

    func facts(_ head: HTTPRequest, isUpgrade: Bool) -> WebRequestFacts {
        let target = Substring(head.path ?? "/")
        let question = target.firstIndex(of: "?")
        let path = question.map { target[..<$0] } ?? target
        let query = question.map { target[target.index(after: $0)...] }
        return WebRequestFacts(
            method: head.method.rawValue, path: path, query: query,
            host: head.authority.map { Substring($0) },
            origin: head.headerFields[.origin].map { Substring($0) },
            fetchSite: head.headerFields[Self.secFetchSite].map { Substring($0) },
            fetchMode: head.headerFields[Self.secFetchMode].map { Substring($0) },
            cookieHeader: head.headerFields[values: .cookie].isEmpty
                ? nil : Substring(head.headerFields[values: .cookie].joined(separator: "; ")),
            isWebSocketUpgrade: isUpgrade)
    }

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let secFetchMode = HTTPField.Name("Sec-Fetch-Mode")!

    func decide(_ facts: WebRequestFacts) -> WebRequestDecision {
        state.withLockedValue { state in
            WebRequestGuard.decide(facts, port: state.port, isSession: { state.sessions.isSession($0) })
        }
    }

    func respond(to request: Request) async -> Response {
        switch decide(facts(request.head, isUpgrade: false)) {
        case .upload(let query):
            return await upload(request, query: query)
        case .redeem(let token):
            guard let session = state.withLockedValue({ $0.sessions.redeem(launchToken: token, now: WebClock.now()) })
            else { return refusal(.linkUsedOrExpired) }
            // A page that moves on to `/` by itself rather than a redirect: a redirect would
            // keep the sign-in's initiator (the terminal or the open file, another site to
            // the browser), and a SameSite=Strict cookie is not sent on such a navigation.
            // The meta refresh starts from this page, our own origin.
            var headers = Self.baseHeaders()
            headers[.contentType] = "text/html; charset=utf-8"
            headers[.setCookie] = WebCookie.setCookieValue(for: session)
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: Self.signedInPage)))
        case .serve(let asset):
            var headers = Self.baseHeaders()
            headers[.contentType] = asset.contentType
            let body = request.method == .head ? ByteBuffer() : ByteBuffer(bytes: asset.bytes)
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
        case .upgrade:
            // An upgrade the guard allowed reaches HTTP only when `shouldUpgrade` refused
            // it for the WebSocket limit.
            return refusal(.tooManyWebSockets)
        case .refuse(let why):
            return refusal(why)
        }
    }

    /// `POST /upload`: checks the limits before reading the body, streams it to a staged
    /// file, offers it with `files.send`, answers `{transfers: [...]}` or
    /// `{error: {status, message}}`. Every failure removes what was staged.
    func upload(_ request: Request, query: Substring?) async -> Response {
        guard case .success(let staging) = staging else {
            if case .failure(let error) = staging { return uploadRefusal(error) }
            return uploadRefusal(.stagingFailed("no staging directory"))
        }
        let length = request.headers[.contentLength].flatMap { Int64($0) }
        let upload: WebUploadRequest
        switch WebUploadRequest.parse(query: query, contentLength: length) {
        case .failure(let error): return uploadRefusal(error)
        case .success(let parsed): upload = parsed
        }
        let ticket: WebUploadStaging.Ticket
        switch staging.begin(upload, nowMs: Self.wallClockMs()) {
        case .failure(let error): return uploadRefusal(error)
        case .success(let admitted): ticket = admitted
        }
        do {
            try await staging.write(request.body, size: upload.size, to: ticket)
        } catch {
            staging.abandon(ticket)
            return uploadRefusal(error)
        }
        switch await WebDaemonCall.send(path: ticket.file, upload: upload, socketPath: options.controlSocketPath) {
        case .failure(let error):
            staging.abandon(ticket)
            return uploadRefusal(error)
        case .success(let transfers):
            staging.sent(ticket, transferIDs: transfers.map(\.id))
            // The transfers may have ended before they were recorded (a small file to a
            // peer that accepts at once): their events are past, so look once now.
            let ids = transfers.map(\.id)
            let socketPath = options.controlSocketPath
            Task {
                let states = await WebDaemonCall.states(of: ids, socketPath: socketPath)
                staging.sweep(states: states, nowMs: Self.wallClockMs())
            }
            var headers = Self.baseHeaders()
            headers[.contentType] = "application/json"
            let body = (try? JSONEncoder().encode(FilesSendResult(transfers: transfers))) ?? Data("{}".utf8)
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
        }
    }

    /// The refusal as JSON for the page. `Connection: close`: a body not read (refused
    /// before it) is not drained, the connection just ends.
    func uploadRefusal(_ error: WebUploadError) -> Response {
        var headers = Self.baseHeaders()
        headers[.contentType] = "application/json"
        headers[.connection] = "close"
        struct Refusal: Encodable {
            struct Detail: Encodable {
                var status: Int
                var message: String
            }
            var error: Detail
        }
        let body =
            (try? JSONEncoder().encode(Refusal(error: .init(status: error.status, message: error.message))))
            ?? Data()
        return Response(
            status: HTTPResponse.Status(code: error.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    static let signedInPage = """
        <!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/">\
        <link rel="icon" href="/icon.svg" type="image/svg+xml">\
        <title>Parley</title><p>Signed in. <a href="/">Open Parley</a></p>

        """

    func refusal(_ why: WebRefusal) -> Response {
        var headers = Self.baseHeaders()
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(
            status: HTTPResponse.Status(code: why.status), headers: headers,
            body: ResponseBody(byteBuffer: ByteBuffer(string: why.message + "\n")))
    }

    static func baseHeaders() -> HTTPFields {
        var fields = HTTPFields()
        for header in WebSecurityHeaders.all {
            if let name = HTTPField.Name(header.name) { fields[name] = header.value }
        }
        return fields
    }

    // MARK: WebSocket

    func shouldUpgrade(_ head: HTTPRequest) -> ShouldUpgradeResult<
        WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>
    > {
        let isUpgrade = head.headerFields[.upgrade]?.lowercased() == "websocket"
        guard case .upgrade = decide(facts(head, isUpgrade: isUpgrade)) else { return .dontUpgrade }
        let admitted = state.withLockedValue { state -> Bool in
            guard state.openWebSockets < WebLimits.maxWebSockets else { return false }
            state.openWebSockets += 1
            return true
        }
        guard admitted else { return .dontUpgrade }
        let path = options.controlSocketPath
        return .upgrade(Self.baseHeaders()) { [self] inbound, outbound, _ in
            defer { state.withLockedValue { $0.openWebSockets -= 1 } }
            await ControlSocketRelay(controlSocketPath: path).run(inbound: inbound, outbound: outbound)
        }
    }
}
