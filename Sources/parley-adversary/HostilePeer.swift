// What every mode that completes a handshake shares: a fresh (or fixed) identity, its card,
// the XX handshake as initiator, and records sealed and framed on the way out, opened and
// decoded on the way in.
import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// Output is line-oriented and read by the tests: one write per line, so nothing waits in a
/// buffer when the process exits or is killed.
func emit(_ s: String) { FileHandle.standardOutput.write(Data((s + "\n").utf8)) }

/// A usage or setup error (not an outcome of the attack): exit status 2.
func fail(_ s: String) -> Never {
    FileHandle.standardError.write(Data("parley-adversary: \(s)\n".utf8))
    exit(2)
}

/// `HOST:PORT` or `[V6]:PORT`.
func parseTarget(_ s: String) -> (String, UInt16) {
    guard let colon = s.lastIndex(of: ":"), let port = UInt16(s[s.index(after: colon)...]) else {
        fail("bad target \(s)")
    }
    var host = String(s[..<colon])
    if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
    return (host, port)
}

/// Runs an initiator handshake presenting `card` (signed however the mode wants).
func handshake(
    _ c: Conn, identity: IdentityKeyPair, staticKey: NoiseStaticKeyPair, card: Card,
    features: ProtocolFeatures = []
) -> SessionHandshake.Established? {
    var hs = SessionHandshake(
        role: .initiator, localCard: card, staticKey: staticKey,
        bootID: Sodium.randomBytes(16), features: features,
        now: UInt64(Date().timeIntervalSince1970))
    guard let m1 = try? hs.start(), c.sendFrame(m1), let m2 = c.recvFrame() else { return nil }
    guard case .established(let final, let est)? = try? hs.receive(m2) else { return nil }
    if let final { _ = c.sendFrame(final) }
    return est
}

func issue(_ id: IdentityKeyPair, noise: NoisePublicKey, name: String) -> Card {
    // Force-try: fixed valid inputs.
    try! Card.issue(
        identity: id, noiseKey: noise, displayName: name, hostName: "adversary",
        issuedAt: UInt64(Date().timeIntervalSince1970), sequence: 1)
}

/// An established session with the target.
struct HostilePeer {
    let conn: Conn
    var established: SessionHandshake.Established
    let identity: IdentityKeyPair
    private var decoder = RecordStreamDecoder()

    /// The target's identity, from the card it presented.
    var target: IdentityPublicKey { established.remoteCard.identityKey }

    init(conn: Conn, established: SessionHandshake.Established, identity: IdentityKeyPair) {
        self.conn = conn
        self.established = established
        self.identity = identity
    }

    /// Connects under a fresh identity called `name`. Exits (status 2) when the target cannot
    /// be reached or refuses the handshake: those are setup failures for every mode using it.
    static func connect(
        _ host: String, _ port: UInt16, timeoutMs: Int, name: String, features: ProtocolFeatures = [],
        receiveBuffer: Int32? = nil
    ) -> HostilePeer {
        guard let c = Conn(host, port, timeoutMs: timeoutMs, receiveBuffer: receiveBuffer) else { fail("connect") }
        let id = IdentityKeyPair.generate()
        let st = NoiseStaticKeyPair.generate()
        guard
            let est = handshake(
                c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: name), features: features)
        else { fail("handshake refused") }
        return HostilePeer(conn: c, established: est, identity: id)
    }

    /// Seals `records` (as many Noise messages as the encoder cuts) and sends them; false if
    /// the connection broke.
    @discardableResult
    mutating func send(_ records: [AppRecord]) -> Bool {
        var encoder = RecordStreamEncoder()
        records.forEach { encoder.append($0) }
        return sendChunks(of: &encoder)
    }

    /// Sends what `encoder` holds; false if the connection broke.
    mutating func sendChunks(of encoder: inout RecordStreamEncoder) -> Bool {
        for chunk in encoder.drainChunks() {
            guard let sealed = try? established.transport.seal(chunk), conn.sendFrame(sealed) else { return false }
        }
        return true
    }

    /// `send`, or print "closed" and exit 0 when the target hung up: for the modes whose
    /// outcome that is.
    mutating func sendOrReportClosed(_ records: [AppRecord]) {
        guard send(records) else {
            emit("closed")
            exit(0)
        }
    }

    /// The records of the next frame; nil when the connection ended, the receive timed out
    /// or the frame did not open (each ends a mode's reading).
    mutating func receive() -> [AppRecord]? {
        guard let f = conn.recvFrame() else { return nil }
        return open(f)
    }

    /// The records of a frame already read; nil if it does not open.
    mutating func open(_ frame: [UInt8]) -> [AppRecord]? {
        guard let p = try? established.transport.open(frame) else { return nil }
        decoder.append(p)
        var records: [AppRecord] = []
        while let r = try? decoder.next() { records.append(r) }
        return records
    }

    /// The records that have arrived, waiting up to `waitMs` for the first of them (0: only
    /// what is there already); `ended` once the connection closed or a frame did not open.
    mutating func available(waitMs: Int32) -> (records: [AppRecord], ended: Bool) {
        var pfd = pollfd(fd: conn.fd, events: Int16(POLLIN), revents: 0)
        var timeout = waitMs
        var all: [AppRecord] = []
        while poll(&pfd, 1, timeout) > 0 {
            timeout = 0
            guard let records = receive() else { return (all, true) }
            all += records
        }
        return (all, false)
    }

    /// Reads until `done` says so for a record (true) or the connection ends (false).
    mutating func read(until done: (AppRecord) -> Bool) -> Bool {
        while let records = receive() {
            for r in records where done(r) { return true }
        }
        return false
    }
}

/// The mode's arguments after MODE and HOST:PORT.
struct ModeArguments {
    let host: String
    let port: UInt16
    /// Every argument, MODE first (as the usage numbers them).
    let all: [String]

    /// The third argument as a number (most modes' N), 0 when absent or not a number.
    var n: Int { all.count > 2 ? Int(all[2]) ?? 0 : 0 }

    func string(_ index: Int) -> String? { all.count > index ? all[index] : nil }
    func int(_ index: Int, default value: Int) -> Int { string(index).flatMap { Int($0) } ?? value }
    func double(_ index: Int, default value: Double) -> Double { string(index).flatMap { Double($0) } ?? value }
}

extension Array where Element == UInt8 {
    mutating func appendUInt32BE(_ v: UInt32) {
        append(contentsOf: [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)])
    }
}
