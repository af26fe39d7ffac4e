import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `parley doctor PEER`: does the peer's address accept a TCP connection from this host?
/// One non-blocking connect per address, bounded by `timeout`, closed at once without a
/// byte sent (the peer's parleyd sees a connection that ends before its handshake).
enum TCPProbe {
    /// A connect over a working LAN takes milliseconds; a cut link never answers.
    static let timeoutMilliseconds: Int32 = 3_000
    /// Addresses probed at most (a peer's remembered and advertised ones).
    static let maxAddresses = 8

    static func probe(_ address: String, timeoutMilliseconds: Int32 = timeoutMilliseconds) -> DoctorTCPOutcome {
        guard let hp = HostPort(address) else { return .failed("not host:port") }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = hp.kind == .hostName ? 0 : AI_NUMERICHOST
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(hp.host, String(hp.port), &hints, &list)
        guard rc == 0, let first = list else {
            return .failed("cannot resolve \(hp.host): \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(
            first.pointee.ai_family,
            Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failed(String(cString: strerror(errno))) }
        defer { close(fd) }
        if connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 { return .accepted }
        guard errno == EINPROGRESS else { return outcome(errno) }
        var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&pfd, 1, timeoutMilliseconds)
        guard ready > 0 else { return .timedOut }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        return error == 0 ? .accepted : outcome(error)
    }

    private static func outcome(_ code: Int32) -> DoctorTCPOutcome {
        switch code {
        case ECONNREFUSED: return .refused
        case ETIMEDOUT: return .timedOut
        default: return .failed(String(cString: strerror(code)))
        }
    }
}

/// What a TCP connect to one address came to.
enum DoctorTCPOutcome: Equatable {
    case accepted
    /// Something answered "nothing listens here" (RST): the host is up, parleyd is not.
    case refused
    /// No answer: the link is cut, the host is down or a firewall drops the packets.
    case timedOut
    case failed(String)
}
