// Modes about the handshake and the session's framing: cards that lie, replayed and
// reordered transport messages, an honest peer, and many identities at once.
import Foundation
import ParleyCore

/// `wrong-noise-key T`: a validly signed card that names another Noise key than the one
/// the handshake uses.
func runWrongNoiseKey(_ a: ModeArguments) {
    guard let c = Conn(a.host, a.port) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let realStatic = NoiseStaticKeyPair.generate()
    let other = NoiseStaticKeyPair.generate()
    let card = issue(id, noise: other.publicKey, name: "mallory")
    let est = handshake(c, identity: id, staticKey: realStatic, card: card)
    emit(est == nil ? "refused-by-us" : (c.closedByPeer() ? "closed" : "open"))
}

/// `forged-card T`: a card claiming another identity (its signature does not verify).
func runForgedCard(_ a: ModeArguments) {
    guard let c = Conn(a.host, a.port) else { fail("connect") }
    let victim = IdentityKeyPair.generate()
    let attacker = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    // A card for the victim's identity, signed by the attacker: splice the signature.
    let good = issue(victim, noise: st.publicKey, name: "victim")
    let byAttacker = issue(attacker, noise: st.publicKey, name: "victim")
    var bytes = good.encoded()
    bytes.replaceSubrange(bytes.count - 64..<bytes.count, with: byAttacker.encoded().suffix(64))
    // SessionHandshake only sends verified cards, so drive Noise directly with this payload.
    var hs = HandshakeState<NoiseSHA256>(role: .initiator, prologue: ProtocolVersion.prologue, staticKey: st)
    guard let m1 = try? hs.writeMessage(payload: []), c.sendFrame(m1), let m2 = c.recvFrame(),
        (try? hs.readMessage(m2)) != nil
    else { fail("handshake") }
    let payload = HandshakePayload(card: bytes, bootID: Sodium.randomBytes(16)).encoded()
    guard let m3 = try? hs.writeMessage(payload: payload) else { fail("m3") }
    c.sendFrame(m3)
    emit(c.closedByPeer() ? "closed" : "open")
}

/// `replay T` / `reorder T`: a valid session, then a transport message sent twice, or
/// message 2 before message 1.
func runReplayOrReorder(_ a: ModeArguments, replay: Bool) {
    var peer = HostilePeer.connect(
        a.host, a.port, timeoutMs: 5000, name: "replayer-\(Int.random(in: 0..<1_000_000))")
    let m1 = try! peer.established.transport.seal(AppRecord.ping(1).encoded())
    let m2 = try! peer.established.transport.seal(AppRecord.ping(2).encoded())
    if replay {
        peer.conn.sendFrame(m1)
        guard let pong = peer.conn.recvFrame(), (try? peer.established.transport.open(pong)) != nil else {
            fail("no pong to the first ping")
        }
        peer.conn.sendFrame(m1)
    } else {
        peer.conn.sendFrame(m2)
    }
    emit(peer.conn.closedByPeer() ? "closed" : "open")
}

/// `honest T NAME`: a real handshake and a ping; "OK" once the pong came.
func runHonest(_ a: ModeArguments) {
    guard let c = Conn(a.host, a.port, timeoutMs: 5000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    let name = a.string(2) ?? "honest"
    guard let est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: name)) else {
        fail("refused")
    }
    var peer = HostilePeer(conn: c, established: est, identity: id)
    peer.send([.ping(7)])
    // The node may send records of its own first (listenPorts): read a few frames.
    for _ in 0..<4 {
        guard let records = peer.receive() else { break }
        for r in records {
            if case .pong(7) = r {
                print("OK")
                exit(0)
            }
        }
    }
    emit("no pong")
}

/// `identities T N SOURCES [HOLD]`: N connections, each a fresh identity completing the
/// handshake, from the given source addresses in turn, all held HOLD seconds.
func runIdentities(_ a: ModeArguments) {
    let sourceArgument = a.string(3) ?? "0"
    let sourceList: [String]
    if let count = Int(sourceArgument) {
        guard count >= 0, count <= 250 else { fail("SOURCES 0...250 or a list of addresses") }
        sourceList = (0..<count).map { "127.0.1.\(1 + $0)" }
    } else {
        sourceList = sourceArgument.split(separator: ",").map(String.init)
        guard (1...4_096).contains(sourceList.count) else { fail("SOURCES: 1...4096 addresses") }
    }
    let n = a.n
    guard n >= 1, n <= 10_000 else { fail("N 1...10000") }
    var held: [Conn] = []
    var failed = 0
    let start = Date()
    for i in 0..<n {
        if Date().timeIntervalSince(start) > 150 { break }
        let bind = sourceList.isEmpty ? nil : sourceList[i % sourceList.count]
        guard let c = Conn(a.host, a.port, timeoutMs: 3000, bindAddress: bind) else {
            failed += 1
            continue
        }
        let id = IdentityKeyPair.generate()
        let st = NoiseStaticKeyPair.generate()
        // A refused connection (rate, admission) is closed before or during the handshake.
        guard handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "sybil\(i)")) != nil
        else {
            failed += 1
            continue
        }
        held.append(c)
    }
    let hold = a.double(4, default: 1)
    // A progress line for tests that act while the sessions are held (the last line stays
    // the result).
    emit("connected \(held.count) failed \(failed)")
    // The daemon's refusals (close, then EOF) arrive meanwhile; the rest hold their slots.
    Thread.sleep(forTimeInterval: max(1, min(hold, 60)))
    let closed = held.filter { $0.closedNow() }.count
    emit("established \(held.count - closed) refused \(closed) failed \(failed)")
}
