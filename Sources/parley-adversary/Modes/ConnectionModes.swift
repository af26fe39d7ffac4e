// Modes that attack the connection before or instead of a handshake: bytes that are not
// the protocol, half frames held open, and connection floods.
import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// `random-bytes T N`: N random bytes; did the daemon close?
func runRandomBytes(_ a: ModeArguments) {
    guard let c = Conn(a.host, a.port, timeoutMs: 6000) else { fail("connect") }
    c.send(Sodium.randomBytes(max(a.n, 1)))
    emit(c.closedByPeer() ? "closed" : "open")
}

/// `slowloris T N SECS`: N connections, each with half a frame, held SECS seconds.
func runSlowloris(_ a: ModeArguments) {
    let hold = a.double(3, default: 5)
    var conns: [Conn] = []
    for _ in 0..<a.n {
        if let c = Conn(a.host, a.port) {
            c.send([0x00, 0x20, 0x01])
            conns.append(c)
        }
    }
    emit("opened \(conns.count)")
    Thread.sleep(forTimeInterval: hold)
    // How many did the daemon cut (handshake timeout or admission limits)?
    var closed = 0
    for c in conns {
        var b = [UInt8](repeating: 0, count: 16)
        let r = b.withUnsafeMutableBytes { Glibc.recv(c.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if r == 0 || (r < 0 && errno == ECONNRESET) { closed += 1 }
    }
    emit("closed \(closed)")
}

/// `frame-silence T SECS`: announce a 65,535-byte frame, send nothing; when was it closed?
func runFrameSilence(_ a: ModeArguments) {
    guard let c = Conn(a.host, a.port, timeoutMs: Int((Double(a.n == 0 ? 10 : a.n)) * 1000)) else { fail("connect") }
    let t0 = Date()
    c.send([0xff, 0xff])
    let closed = c.closedByPeer()
    emit(closed ? String(format: "closed after %.1f s", Date().timeIntervalSince(t0)) : "open")
}

/// `flood T N`: N connection attempts (connect, close); how many were kept?
func runConnectionFlood(_ a: ModeArguments) {
    var accepted = 0
    var refused = 0
    let deadline = Date().addingTimeInterval(60)
    for _ in 0..<a.n {
        if Date() > deadline { break }
        if let c = Conn(a.host, a.port, timeoutMs: 500) {
            // Accepted by the kernel; did the daemon keep it? A refused one is closed at once
            // (100 ms is generous for a loaded CI machine; only kept ones wait that long).
            var b = [UInt8](repeating: 0, count: 1)
            var pfd = pollfd(fd: c.fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 100) > 0, b.withUnsafeMutableBytes({ Glibc.recv(c.fd, $0.baseAddress, 1, 0) }) <= 0 {
                refused += 1
            } else {
                accepted += 1
            }
        } else {
            refused += 1
        }
    }
    emit("accepted \(accepted) refused \(refused)")
}
