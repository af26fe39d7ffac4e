/// A small blocking client for the control socket: one request at a time, notifications
/// (after `messages.subscribe`) kept in order until read. Used by the `parley` CLI and by
/// tests. Not thread-safe: use one client from one thread.
public final class ControlClient {
    /// Default wait for an answer. The daemon answers from local state (no network round
    /// trip except `messages.send` with `wait`, which passes its own timeout), so 10 s of
    /// silence means it is stuck, not slow.
    public static let defaultCallTimeout: Duration = .seconds(10)

    /// Bytes asked of the socket per receive: large enough that a maximal line takes few
    /// calls, small enough to allocate per call.
    static let receiveChunkBytes = 65_536

    /// Wait used by `call` when it is not given one.
    public var callTimeout: Duration

    private let socket: UnixSocketConnection
    private var lines = LineBuffer()
    private var pendingNotifications: [JSONRPCNotification] = []
    private var nextID = 1

    /// The control socket's path: the descriptor socket is next to it.
    public let path: String

    private init(socket: UnixSocketConnection, path: String, callTimeout: Duration) {
        self.socket = socket
        self.path = path
        self.callTimeout = callTimeout
    }

    public static func connect(
        path: String, callTimeout: Duration = defaultCallTimeout
    ) throws(ControlClientError) -> ControlClient {
        let socket = try UnixSocketConnection.connect(path: path, timeout: callTimeout)
        return ControlClient(socket: socket, path: path, callTimeout: callTimeout)
    }

    /// Calls a method on the descriptor socket (`files.send`, `files.open`): a connection of
    /// its own for this one request, with `descriptors` attached to the request line
    /// (SCM_RIGHTS, docs/CONTROL.md "Descriptor socket"). Returns the result and the
    /// descriptors attached to the answer, which the caller then owns (and must close).
    /// The caller's descriptors stay open here.
    public func call<P: ControlCallParams>(
        _ params: P, passing descriptors: [Int32], timeout: Duration? = nil
    ) throws(ControlClientError) -> (result: P.ResultType, descriptors: [Int32]) {
        try Self.callPassing(
            params, descriptors: descriptors, controlPath: path, timeout: timeout ?? callTimeout)
    }

    /// `call(_:passing:)` without a control connection (one connection to the descriptor
    /// socket that goes with the control socket at `controlPath`).
    public static func callPassing<P: ControlCallParams>(
        _ params: P, descriptors: [Int32], controlPath: String, timeout: Duration
    ) throws(ControlClientError) -> (result: P.ResultType, descriptors: [Int32]) {
        guard descriptors.count <= DescriptorRights.maxDescriptorsPerMessage else {
            throw .protocolViolation("more than \(DescriptorRights.maxDescriptorsPerMessage) descriptors in one call")
        }
        let socketPath = ControlSocketPath.descriptorSocket(forControl: controlPath)
        let socket = try UnixSocketConnection.connect(path: socketPath, timeout: timeout)
        defer { socket.close() }
        let line: [UInt8]
        do {
            guard case .object(let members) = try JSONValue(encoding: params) else {
                throw ControlClientError.protocolViolation("\(P.self) is not an object")
            }
            line = try ControlJSON.line(JSONRPCRequest(id: .number(1), method: P.method, params: members))
        } catch {
            throw .protocolViolation("cannot encode \(P.method) params")
        }
        let deadline = SocketDeadline(after: timeout)
        try socket.send(line, passing: descriptors, deadline: deadline)
        var lines = LineBuffer()
        var received: [Int32] = []
        do throws(ControlClientError) {
            while true {
                let popped: [UInt8]?
                do { popped = try lines.popLine() } catch {
                    throw ControlClientError.protocolViolation("a line longer than \(ControlLimits.maxLineBytes) bytes")
                }
                if let answer = popped {
                    switch ControlServerMessage.parse(line: answer) {
                    case .failure(let error): throw ControlClientError.protocolViolation(error.message)
                    case .success(.notification): continue
                    case .success(.response(let response)):
                        switch response.outcome {
                        case .error(let error): throw ControlClientError.remote(error)
                        case .result(let value):
                            do {
                                return (try value.decode(as: P.ResultType.self), received)
                            } catch {
                                throw ControlClientError.protocolViolation(
                                    "\(P.method) result does not match the protocol")
                            }
                        }
                    }
                }
                let chunk = try socket.receivePassing(
                    maxBytes: receiveChunkBytes, maxDescriptors: DescriptorRights.maxDescriptorsPerMessage,
                    deadline: deadline)
                received += chunk.descriptors
                guard !chunk.bytes.isEmpty || !chunk.descriptors.isEmpty else { throw .connectionClosed }
                lines.append(chunk.bytes)
            }
        } catch {
            DescriptorMessage.closeAll(received)
            throw error
        }
    }

    /// Calls a typed method and decodes its result. A daemon error is thrown as `.remote`.
    public func call<P: ControlCallParams>(
        _ params: P, timeout: Duration? = nil
    ) throws(ControlClientError) -> P.ResultType {
        let members: [String: JSONValue]
        do {
            guard case .object(let m) = try JSONValue(encoding: params) else {
                throw ControlClientError.protocolViolation("\(P.self) is not an object")
            }
            members = m
        } catch {
            throw .protocolViolation("cannot encode \(P.method) params")
        }
        let result = try call(method: P.method, params: members, timeout: timeout)
        do {
            return try result.decode(as: P.ResultType.self)
        } catch {
            throw .protocolViolation("\(P.method) result does not match the protocol")
        }
    }

    /// Calls any method; returns the raw result. `timeout` nil means `callTimeout`.
    public func call(
        method: String, params: [String: JSONValue]?, timeout: Duration? = nil
    ) throws(ControlClientError) -> JSONValue {
        let id = JSONRPCID.number(nextID)
        nextID += 1
        let line: [UInt8]
        do {
            line = try ControlJSON.line(JSONRPCRequest(id: id, method: method, params: params))
        } catch {
            throw .protocolViolation("cannot encode the request")
        }
        let deadline = SocketDeadline(after: timeout ?? callTimeout)
        do {
            try socket.send(line, deadline: deadline)
        } catch {
            // The daemon may have answered and closed before reading our request (too
            // many clients, not permitted): report its reason rather than a broken pipe.
            if case .response(let response)? = try? nextMessage(deadline: SocketDeadline(after: .seconds(1))),
                response.id == nil, let remote = response.error
            {
                throw .remote(remote)
            }
            throw error
        }
        while true {
            switch try nextMessage(deadline: deadline) {
            case .notification(let notification):
                guard pendingNotifications.count < ControlLimits.maxSubscriptionBacklogNotifications else {
                    throw .protocolViolation("too many notifications while waiting for an answer")
                }
                pendingNotifications.append(notification)
            case .response(let response) where response.id == id:
                switch response.outcome {
                case .result(let value): return value
                case .error(let error): throw .remote(error)
                }
            case .response(let response):
                // A null id carries a connection-level error (line too long, too many
                // clients, idle timeout); any other id is not ours and is ignored.
                if response.id == nil, let error = response.error { throw .remote(error) }
            }
        }
    }

    /// The next notification, waiting up to `timeout` (nil: until one comes or the daemon
    /// closes the connection).
    public func readNotification(timeout: Duration? = nil) throws(ControlClientError) -> JSONRPCNotification {
        if !pendingNotifications.isEmpty { return pendingNotifications.removeFirst() }
        let deadline = timeout.map { SocketDeadline(after: $0) }
        while true {
            switch try nextMessage(deadline: deadline) {
            case .notification(let notification):
                return notification
            case .response(let response):
                if response.id == nil, let error = response.error { throw .remote(error) }
            }
        }
    }

    /// A notification that has already arrived, without waiting: nil when none is complete
    /// yet. For clients that wait on `fileDescriptor` with poll(2) themselves (`parley chat`).
    public func pollNotification() throws(ControlClientError) -> JSONRPCNotification? {
        if !pendingNotifications.isEmpty { return pendingNotifications.removeFirst() }
        while true {
            while let message = try bufferedMessage() {
                switch message {
                case .notification(let notification): return notification
                case .response(let response):
                    if response.id == nil, let error = response.error { throw .remote(error) }
                }
            }
            guard try socket.isReadable() else { return nil }
            let chunk = try socket.receive(maxBytes: Self.receiveChunkBytes, deadline: nil)
            guard !chunk.isEmpty else { throw .connectionClosed }
            lines.append(chunk)
        }
    }

    /// Whether notifications are already buffered (received while waiting for an answer):
    /// poll(2) on `fileDescriptor` would not report them.
    public var hasBufferedNotifications: Bool { !pendingNotifications.isEmpty || lines.hasCompleteLine }

    /// The socket, to wait for readability with poll(2). Do not read from it directly.
    public var fileDescriptor: Int32 { socket.descriptor }

    public func close() { socket.close() }

    private func nextMessage(deadline: SocketDeadline?) throws(ControlClientError) -> ControlServerMessage {
        while true {
            if let message = try bufferedMessage() { return message }
            let chunk = try socket.receive(maxBytes: Self.receiveChunkBytes, deadline: deadline)
            guard !chunk.isEmpty else { throw .connectionClosed }
            lines.append(chunk)
        }
    }

    /// The next complete line already received, parsed; nil if none.
    private func bufferedMessage() throws(ControlClientError) -> ControlServerMessage? {
        let line: [UInt8]?
        do {
            line = try lines.popLine()
        } catch {
            throw .protocolViolation("a line longer than \(ControlLimits.maxLineBytes) bytes")
        }
        guard let line else { return nil }
        switch ControlServerMessage.parse(line: line) {
        case .success(let message): return message
        case .failure(let error): throw .protocolViolation(error.message)
        }
    }
}
