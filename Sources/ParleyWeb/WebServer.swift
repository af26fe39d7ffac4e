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
/// (`WebRequestGuard`, `WebAuthHandshake`, `WebRelay`). It holds no state of the chat: every
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
        var port = 0
        var openWebSockets = 0
        var signingInWebSockets = 0
        /// `GET /files/ID` responses still being written (`WebReceivedFileResponse`).
        var fileResponses = 0
    }

    let options: Options
    /// This run's secret: made here, kept in memory only, given to the person in the
    /// sign-in link's fragment (docs/WEB.md "Signing in").
    let key = WebSignInKey.random()
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

    /// The sign-in link: the page's address with the secret in the fragment
    /// (`#k=SECRET`), which the browser keeps to itself.
    public func signInURL() -> String {
        "http://127.0.0.1:\(state.withLockedValue { $0.port })/#k=\(key.secret.text)"
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
                        additionalChannelHandlers: [
                            WebWriteStallHandler(timeout: .seconds(WebLimits.responseWriteStallSeconds))
                        ],
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
            authHeader: head.headerFields[Self.parleyAuth].map { Substring($0) },
            isWebSocketUpgrade: isUpgrade)
    }

    static let secFetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let secFetchMode = HTTPField.Name("Sec-Fetch-Mode")!
    static let parleyAuth = HTTPField.Name(WebRequestGuard.authHeaderName)!

    func decide(_ facts: WebRequestFacts) -> WebRequestDecision {
        let port = state.withLockedValue { $0.port }
        return WebRequestGuard.decide(facts, port: port, isUploadKey: key.isUploadKey)
    }

    func respond(to request: Request) async -> Response {
        switch decide(facts(request.head, isUpgrade: false)) {
        case .upload(let query):
            return await upload(request, query: query)
        case .receivedFile(let id):
            return await receivedFile(id: id)
        case .serve(let asset):
            var headers = Self.baseHeaders()
            headers[.contentType] = asset.contentType
            let body = request.method == .head ? ByteBuffer() : ByteBuffer(bytes: asset.bytes)
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: body))
        case .upgrade, .probe:
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
        let probeOnly: Bool
        let window: WebWindow
        switch decide(facts(head, isUpgrade: isUpgrade)) {
        case .upgrade(let w):
            probeOnly = false
            window = w
        case .probe:
            probeOnly = true
            window = .page
        default: return .dontUpgrade
        }
        guard let origin = head.headerFields[.origin].map({ Substring($0) }) else { return .dontUpgrade }
        // Sockets still signing in hold no daemon connection and are counted apart.
        let admitted = state.withLockedValue { state -> Bool in
            guard state.signingInWebSockets < WebLimits.maxSigningInWebSockets else { return false }
            state.signingInWebSockets += 1
            return true
        }
        guard admitted else { return .dontUpgrade }
        let path = options.controlSocketPath
        let key = key
        return .upgrade(Self.baseHeaders()) { [self] inbound, outbound, _ in
            let messages = PageMessages(inbound)
            let signedIn = await WebSocketSignIn.run(
                key: key, origin: origin, probeOnly: probeOnly, messages: messages, outbound: outbound
            ) {
                // Signed in: take one of the daemon connections, or refuse.
                self.state.withLockedValue { state -> WebRefusal? in
                    guard state.openWebSockets < WebLimits.maxWebSockets else { return .tooManyWebSockets }
                    state.openWebSockets += 1
                    return nil
                }
            }
            state.withLockedValue { $0.signingInWebSockets -= 1 }
            guard signedIn else { return }
            defer { state.withLockedValue { $0.openWebSockets -= 1 } }
            await ControlSocketRelay(controlSocketPath: path, window: window).run(
                messages: messages, outbound: outbound)
        }
    }
}
