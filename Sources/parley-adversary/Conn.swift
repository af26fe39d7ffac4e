// A blocking TCP socket for the adversary's modes: timeouts on every call, an optional
// source address, and the 2-byte length framing of docs/PROTOCOL.md ("Framing").
import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking TCP connection with a receive timeout.
final class Conn {
    let fd: Int32
    init?(
        _ host: String, _ port: UInt16, timeoutMs: Int = 3000, receiveBuffer: Int32? = nil, bindAddress: String? = nil
    ) {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var res: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &res) == 0, let ai = res else { return nil }
        defer { freeaddrinfo(res) }
        fd = socket(ai.pointee.ai_family, ai.pointee.ai_socktype, 0)
        guard fd >= 0 else { return nil }
        var tv = timeval(tv_sec: timeoutMs / 1000, tv_usec: Int((timeoutMs % 1000) * 1000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        // Before connect, so the window advertised from the start is this small.
        if var rcv = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, socklen_t(MemoryLayout<Int32>.size)) }
        // PARLEY_ADVERSARY_BIND=127.0.0.2 makes the attack come from another source
        // address than the honest peers' (loopback is a whole /8); in the LAN lab, one of
        // the many IPv4 or IPv6 addresses the attacking host was given.
        if let src = bindAddress ?? ProcessInfo.processInfo.environment["PARLEY_ADVERSARY_BIND"] {
            guard Self.bind(fd, to: src, family: ai.pointee.ai_family) else {
                Glibc.close(fd)
                return nil
            }
        }
        guard connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 else {
            Glibc.close(fd)
            return nil
        }
    }
    deinit { Glibc.close(fd) }
    /// Binds `fd` to the source address `src` (of the target's family); false if it is not
    /// an address of that family or not one of this host's.
    static func bind(_ fd: Int32, to src: String, family: Int32) -> Bool {
        if family == AF_INET {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            guard inet_pton(AF_INET, src, &sin.sin_addr) == 1 else { return false }
            return withUnsafePointer(to: &sin) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
        var sin6 = sockaddr_in6()
        sin6.sin6_family = sa_family_t(AF_INET6)
        guard family == AF_INET6, inet_pton(AF_INET6, src, &sin6.sin6_addr) == 1 else { return false }
        return withUnsafePointer(to: &sin6) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }
    @discardableResult
    func send(_ b: [UInt8]) -> Bool {
        var off = 0
        while off < b.count {
            let n = b[off...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            off += n
        }
        return true
    }
    func recvExactly(_ n: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: n)
        var got = 0
        while got < n {
            let r = out[got...].withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if r <= 0 { return nil }
            got += r
        }
        return out
    }
    func recvFrame() -> [UInt8]? {
        guard let h = recvExactly(2) else { return nil }
        let len = Int(h[0]) << 8 | Int(h[1])
        return recvExactly(len)
    }
    @discardableResult
    func sendFrame(_ m: [UInt8]) -> Bool { send((try? Frame.encode(m)) ?? []) }
    /// Reads whatever has arrived without waiting: true if that ends in EOF or a reset.
    func closedNow() -> Bool {
        var b = [UInt8](repeating: 0, count: 65536)
        while true {
            let r = b.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if r == 0 { return true }
            if r < 0 { return errno == ECONNRESET || errno == EPIPE }
        }
    }
    /// True if the peer closed the connection (EOF or reset) within the timeout.
    func closedByPeer() -> Bool {
        var b = [UInt8](repeating: 0, count: 4096)
        while true {
            let r = b.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, $0.count, 0) }
            if r == 0 { return true }
            if r < 0 { return errno == ECONNRESET }
        }
    }
}
