#if canImport(Glibc)
    import Glibc
#endif

/// A connected stream socket (TCP on loopback or Unix) used in blocking style, every wait
/// bounded by a `Deadline` through poll. The benchmark's clients are deliberately plain:
/// one syscall per read or write, so what is measured is the daemon, not a client framework.
final class Socket: @unchecked Sendable {
    let fd: Int32
    private var closed = false
    /// Bytes asked of the kernel per read: a 64 KiB message plus its JSON in few calls.
    static let readChunkBytes = 256 * 1024
    private var scratch = [UInt8](repeating: 0, count: Socket.readChunkBytes)

    private init(fd: Int32) { self.fd = fd }
    deinit { close() }

    /// Connects to 127.0.0.1:`port` with TCP_NODELAY (as parleyd and any chat client would).
    static func tcp(port: Int, deadline: Deadline) throws(BenchError) -> Socket {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io("socket: \(errorText())") }
        let s = Socket(fd: fd)
        var one: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // parleyd admits at most a burst of new connections per source address per second
        // (DaemonLimits). The handshake and scale rows open hundreds of connections, as
        // hundreds of peers on a LAN would: give each its own loopback source address.
        var src = sockaddr_in()
        src.sin_family = sa_family_t(AF_INET)
        src.sin_addr.s_addr = inet_addr(nextSourceAddress())
        _ = withUnsafePointer(to: &src) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard rc == 0 else { throw .io("connect 127.0.0.1:\(port): \(errorText())") }
        _ = deadline
        return s
    }

    private static let sourceCounter = SourceCounter()

    /// 127.1.x.y, a different one for each connection (wrapping after 62,500).
    private static func nextSourceAddress() -> String {
        let n = sourceCounter.next() % 62_500
        return "127.1.\(n / 250).\(n % 250 + 1)"
    }

    static func unix(path: String) throws(BenchError) -> Socket {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io("socket: \(errorText())") }
        let s = Socket(fd: fd)
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            throw .io("socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard rc == 0 else { throw .io("connect \(path): \(errorText())") }
        return s
    }

    func close() {
        guard !closed else { return }
        closed = true
        _ = Glibc.close(fd)
    }

    /// Writes every byte or throws.
    func sendAll(_ bytes: [UInt8], deadline: Deadline) throws(BenchError) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            }
            if n > 0 {
                offset += n
                continue
            }
            let code = errno
            if n < 0 && (code == EAGAIN || code == EINTR) {
                try waitReady(Int16(POLLOUT), deadline: deadline)
                continue
            }
            throw .io("send: \(Socket.errorText(code))")
        }
    }

    /// Reads what is there (at least one byte) and appends it to `buffer`, waiting until
    /// `deadline`. Returns the count; 0 means the peer closed.
    func receive(into buffer: inout [UInt8], deadline: Deadline) throws(BenchError) -> Int {
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
            if n >= 0 {
                buffer.append(contentsOf: scratch[0..<n])
                return n
            }
            let code = errno
            if code == EAGAIN || code == EINTR {
                try waitReady(Int16(POLLIN), deadline: deadline)
                continue
            }
            throw .io("recv: \(Socket.errorText(code))")
        }
    }

    /// True if something can be read now or within `milliseconds`.
    func readable(withinMilliseconds ms: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, ms) > 0
    }

    private func waitReady(_ events: Int16, deadline: Deadline) throws(BenchError) {
        while true {
            let left = deadline.millisecondsLeft
            guard left > 0 else { throw .timedOut("socket wait") }
            var p = pollfd(fd: fd, events: events, revents: 0)
            let r = poll(&p, 1, left)
            if r > 0 { return }
            if r < 0 && errno != EINTR { throw .io("poll: \(Socket.errorText())") }
        }
    }

    static func errorText(_ code: Int32 = errno) -> String {
        guard let t = strerror(code) else { return "error \(code)" }
        return String(cString: t)
    }
}

private func errorText() -> String { Socket.errorText(errno) }

/// A free TCP port on 127.0.0.1 for a reference server that cannot report the port it
/// bound (openssl s_server, ngircd). The tiny race with other programs is acceptable here.
func freeLoopbackPort() throws(BenchError) -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw .io("socket: \(Socket.errorText())") }
    defer { _ = Glibc.close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = 0
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &addr) { p in
        p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
            bind(fd, sa, len) == 0 && getsockname(fd, sa, &len) == 0
        }
    }
    guard ok else { throw .io("bind: \(Socket.errorText())") }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// A thread-safe counter for source addresses.
final class SourceCounter: @unchecked Sendable {
    private var value = 0
    private var lock = pthread_mutex_t()
    init() { pthread_mutex_init(&lock, nil) }
    func next() -> Int {
        pthread_mutex_lock(&lock)
        defer { pthread_mutex_unlock(&lock) }
        value += 1
        return value
    }
}
