#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A connected `AF_UNIX` stream socket with deadline-bounded send and receive. Blocking
/// style (the caller waits) but never unbounded: every wait goes through `poll` with the
/// time left, and the socket calls themselves never block.
final class UnixSocketConnection {
    private var fd: Int32

    /// Bytes available for the path in `sockaddr_un.sun_path`, keeping one for the NUL.
    static var maxPathBytes: Int { MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1 }

    private init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// Connects to `path`; `timeout` bounds a connect that blocks on a full listen backlog.
    static func connect(path: String, timeout: Duration?) throws(ControlClientError) -> UnixSocketConnection {
        let pathBytes = Array(path.utf8)
        guard pathBytes.count <= maxPathBytes else {
            throw .socketPathTooLong(path: path, maxBytes: maxPathBytes)
        }
        if let shared = ControlSocketPath.sharedDirectory(of: path) {
            throw .sharedSocketDirectory(path: path, directory: shared)
        }
        #if canImport(Darwin)
            let fd = socket(AF_UNIX, SOCK_STREAM, 0)
        #else
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #endif
        guard fd >= 0 else { throw .cannotConnect(path: path, reason: lastErrorText()) }
        let connection = UnixSocketConnection(fd: fd)
        #if canImport(Darwin)
            var one: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        if let timeout {
            var tv = timeval(
                tv_sec: .init(timeout.components.seconds),
                tv_usec: .init(timeout.components.attoseconds / 1_000_000_000_000))
            _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
            raw[pathBytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard result == 0 else { throw .cannotConnect(path: path, reason: lastErrorText()) }
        return connection
    }

    /// Sends all of `bytes` or throws; gives up at `deadline` (nil: wait as long as it takes).
    func send(_ bytes: [UInt8], deadline: SocketDeadline?) throws(ControlClientError) {
        var offset = 0
        while offset < bytes.count {
            try wait(for: Int16(POLLOUT), deadline: deadline)
            let sent = bytes.withUnsafeBytes { raw in
                // baseAddress is non-nil: the loop only runs while bytes remain.
                systemSend(fd, raw.baseAddress! + offset, raw.count - offset, Self.sendFlags)
            }
            if sent < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { continue }
                if code == EPIPE || code == ECONNRESET { throw .connectionClosed }
                throw .io(operation: "send", reason: Self.errorText(code))
            }
            offset += sent
        }
    }

    /// Receives up to `maxBytes`; an empty result means the peer closed the connection.
    func receive(maxBytes: Int, deadline: SocketDeadline?) throws(ControlClientError) -> [UInt8] {
        while true {
            try wait(for: Int16(POLLIN), deadline: deadline)
            var chunk = [UInt8](repeating: 0, count: maxBytes)
            let received = chunk.withUnsafeMutableBytes { raw in
                recv(fd, raw.baseAddress, raw.count, Self.receiveFlags)
            }
            if received < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { continue }
                if code == ECONNRESET { throw .connectionClosed }
                throw .io(operation: "receive", reason: Self.errorText(code))
            }
            chunk.removeSubrange(received...)
            return chunk
        }
    }

    /// Sends all of `bytes`, with `descriptors` attached to the first of them (SCM_RIGHTS);
    /// the descriptors stay open here (the kernel gave the receiver its own copies).
    func send(_ bytes: [UInt8], passing descriptors: [Int32], deadline: SocketDeadline?) throws(ControlClientError) {
        var offset = 0
        var attached = descriptors
        while offset < bytes.count {
            try wait(for: Int16(POLLOUT), deadline: deadline)
            let sent = DescriptorMessage.send(
                socket: fd, bytes: bytes[offset...], descriptors: attached, flags: Self.sendFlags)
            if sent < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { continue }
                if code == EPIPE || code == ECONNRESET { throw .connectionClosed }
                throw .io(operation: "send", reason: Self.errorText(code))
            }
            attached = []
            offset += sent
        }
    }

    /// Receives up to `maxBytes` and the descriptors that came with them; empty bytes and no
    /// descriptors mean the peer closed. Descriptors the kernel had to drop throw.
    func receivePassing(maxBytes: Int, maxDescriptors: Int, deadline: SocketDeadline?) throws(ControlClientError)
        -> DescriptorMessage.Received
    {
        while true {
            try wait(for: Int16(POLLIN), deadline: deadline)
            guard
                let received = DescriptorMessage.receive(
                    socket: fd, maxBytes: maxBytes, maxDescriptors: maxDescriptors, flags: Self.receiveFlags)
            else {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { continue }
                if code == ECONNRESET { throw .connectionClosed }
                throw .io(operation: "receive", reason: Self.errorText(code))
            }
            if received.descriptorsLost {
                DescriptorMessage.closeAll(received.descriptors)
                throw .protocolViolation("the daemon sent more descriptors than asked for, or malformed ones")
            }
            return received
        }
    }

    /// The descriptor, for callers that multiplex with poll(2); -1 once closed.
    var descriptor: Int32 { fd }

    /// Whether a receive would return at once (data, end of stream or an error).
    func isReadable() throws(ControlClientError) -> Bool {
        guard fd >= 0 else { throw .connectionClosed }
        while true {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready >= 0 { return ready > 0 }
            let code = errno
            if code != EINTR { throw .io(operation: "poll", reason: Self.errorText(code)) }
        }
    }

    func close() {
        guard fd >= 0 else { return }
        _ = systemClose(fd)
        fd = -1
    }

    /// Waits until the socket is ready for `events` (or hung up / errored, which the
    /// following send or recv reports), or throws `timedOut` at `deadline`.
    private func wait(for events: Int16, deadline: SocketDeadline?) throws(ControlClientError) {
        guard fd >= 0 else { throw .connectionClosed }
        while true {
            var timeoutMs: Int32 = -1
            if let deadline {
                let left = deadline.instant - ContinuousClock.now
                guard left > .zero else { throw .timedOut(seconds: deadline.timeoutSeconds) }
                let ms = left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1
                timeoutMs = Int32(clamping: ms)
            }
            var descriptor = pollfd(fd: fd, events: events, revents: 0)
            let ready = poll(&descriptor, 1, timeoutMs)
            if ready > 0 { return }
            if ready < 0 {
                let code = errno
                if code == EINTR { continue }
                throw .io(operation: "poll", reason: Self.errorText(code))
            }
            // ready == 0: poll timed out; the loop re-checks the deadline.
        }
    }

    private static func lastErrorText() -> String { errorText(errno) }

    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    #if canImport(Darwin)
        private static let sendFlags = Int32(MSG_DONTWAIT)
    #else
        /// MSG_NOSIGNAL: a daemon that went away must give EPIPE, not kill the CLI with SIGPIPE.
        private static let sendFlags = Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL)
    #endif
    private static let receiveFlags = Int32(MSG_DONTWAIT)
}

/// When a socket wait gives up, and the timeout it came from (for the error message).
struct SocketDeadline {
    let instant: ContinuousClock.Instant
    let timeout: Duration

    init(after timeout: Duration) {
        self.timeout = timeout
        self.instant = ContinuousClock.now + timeout
    }

    var timeoutSeconds: Double {
        Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
    }
}

// The socket calls under names that do not collide with this type's methods.
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    connect(fd, address, length)
}

private func systemSend(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int, _ flags: Int32) -> Int {
    send(fd, bytes, count, flags)
}

private func systemClose(_ fd: Int32) -> Int32 {
    close(fd)
}
