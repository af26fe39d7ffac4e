// parley-adversary: a hostile peer for Parley's adversarial tests. It speaks (or
// mangles) the real wire protocol against a parleyd on loopback or in the LAN lab.
// Every mode is bounded in count and time. Not installed; used by Tests/system.
import Foundation
import ParleyCore
#if canImport(Glibc)
import Glibc
#endif

// Output is line-oriented and read by tests: print() flushes per line via FileHandle below.
func emit(_ s: String) { FileHandle.standardOutput.write(Data((s + "\n").utf8)) }

func fail(_ s: String) -> Never {
    FileHandle.standardError.write(Data("parley-adversary: \(s)\n".utf8))
    exit(2)
}

/// A blocking TCP connection with a receive timeout.
final class Conn {
    let fd: Int32
    init?(_ host: String, _ port: UInt16, timeoutMs: Int = 3000) {
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
        // PARLEY_ADVERSARY_BIND=127.0.0.2 makes the attack come from another source
        // address than the honest peers' (loopback is a whole /8).
        if let src = ProcessInfo.processInfo.environment["PARLEY_ADVERSARY_BIND"], ai.pointee.ai_family == AF_INET {
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, src, &sin.sin_addr)
            _ = withUnsafePointer(to: &sin) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        }
        guard connect(fd, ai.pointee.ai_addr, ai.pointee.ai_addrlen) == 0 else { Glibc.close(fd); return nil }
    }
    deinit { Glibc.close(fd) }
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

func parseTarget(_ s: String) -> (String, UInt16) {
    guard let colon = s.lastIndex(of: ":"), let port = UInt16(s[s.index(after: colon)...]) else { fail("bad target \(s)") }
    var host = String(s[..<colon])
    if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
    return (host, port)
}

/// Runs an initiator handshake presenting `card` (signed however the mode wants).
func handshake(_ c: Conn, identity: IdentityKeyPair, staticKey: NoiseStaticKeyPair, card: Card,
               features: ProtocolFeatures = []) -> SessionHandshake.Established? {
    var hs = SessionHandshake(role: .initiator, localCard: card, staticKey: staticKey,
                              bootID: Sodium.randomBytes(16), features: features,
                              now: UInt64(Date().timeIntervalSince1970))
    guard let m1 = try? hs.start(), c.sendFrame(m1), let m2 = c.recvFrame() else { return nil }
    guard case .established(let final, let est)? = try? hs.receive(m2) else { return nil }
    if let final { _ = c.sendFrame(final) }
    return est
}

func issue(_ id: IdentityKeyPair, noise: NoisePublicKey, name: String) -> Card {
    // Force-try: fixed valid inputs.
    try! Card.issue(identity: id, noiseKey: noise, displayName: name, hostName: "adversary",
                    issuedAt: UInt64(Date().timeIntervalSince1970), sequence: 1)
}

var args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2 else {
    print("""
    usage: parley-adversary MODE HOST:PORT [N]
      random-bytes T N      send N random bytes, report whether the daemon closed
      slowloris T N SECS    open N connections, send half a frame, hold SECS
      frame-silence T SECS  announce a 65535-byte frame, send nothing, report close time
      flood T N             N connection attempts (connect, close), report refused/accepted
      wrong-noise-key T     valid signature, but the card names another Noise key
      forged-card T         card claiming another identity (signature does not verify)
      replay T              valid session, then replay a transport message
      reorder T             valid session, then send message 2 before message 1
      honest T NAME         complete a real handshake as NAME, print OK
      room-flood T ROOMS OPS  as a new (pinned) peer, send signed creates of ROOMS rooms
                            naming the target as member, then OPS add/remove changes in
                            the first room; ping; print "alive" or "closed"
      old-peer T SECS       a peer that predates conversation records (no features in its
                            handshake): send a chat, then for SECS seconds acknowledge
                            every chat and print "chat BODY" for each, and "record 0xNN"
                            for any other record type from 0x09 up
      forge-action T MSGID [ROOMID]  as a new (pinned) peer announcing conversation records:
                            send a chat of its own, then an edit, a delete and a reaction
                            of MSGID (someone else's message), then an edit of its own
                            chat; with ROOMID also a room edit, delete and reaction of
                            MSGID in that room (of which it is not a member); ping; print
                            "acked N" (acks for the records) and "alive"
    """)
    exit(2)
}
let mode = args[0]
let (host, port) = parseTarget(args[1])
let n = args.count > 2 ? Int(args[2]) ?? 0 : 0

switch mode {
case "random-bytes":
    guard let c = Conn(host, port, timeoutMs: 6000) else { fail("connect") }
    c.send(Sodium.randomBytes(max(n, 1)))
    emit(c.closedByPeer() ? "closed" : "open")
case "slowloris":
    let hold = args.count > 3 ? Double(args[3]) ?? 5 : 5
    var conns: [Conn] = []
    for _ in 0..<n { if let c = Conn(host, port) { c.send([0x00, 0x20, 0x01]); conns.append(c) } }
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
case "frame-silence":
    guard let c = Conn(host, port, timeoutMs: Int((Double(n == 0 ? 10 : n)) * 1000)) else { fail("connect") }
    let t0 = Date()
    c.send([0xff, 0xff])
    let closed = c.closedByPeer()
    emit(closed ? String(format: "closed after %.1f s", Date().timeIntervalSince(t0)) : "open")
case "flood":
    var accepted = 0, refused = 0
    let deadline = Date().addingTimeInterval(60)
    for _ in 0..<n {
        if Date() > deadline { break }
        if let c = Conn(host, port, timeoutMs: 500) {
            // Accepted by the kernel; did the daemon keep it? A refused one is closed at once
            // (100 ms is generous for a loaded CI machine; only kept ones wait that long).
            var b = [UInt8](repeating: 0, count: 1)
            var pfd = pollfd(fd: c.fd, events: Int16(POLLIN), revents: 0)
            if poll(&pfd, 1, 100) > 0, b.withUnsafeMutableBytes({ Glibc.recv(c.fd, $0.baseAddress, 1, 0) }) <= 0 { refused += 1 } else { accepted += 1 }
        } else { refused += 1 }
    }
    emit("accepted \(accepted) refused \(refused)")
case "wrong-noise-key":
    guard let c = Conn(host, port) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let realStatic = NoiseStaticKeyPair.generate()
    let other = NoiseStaticKeyPair.generate()
    let card = issue(id, noise: other.publicKey, name: "mallory")
    let est = handshake(c, identity: id, staticKey: realStatic, card: card)
    emit(est == nil ? "refused-by-us" : (c.closedByPeer() ? "closed" : "open"))
case "forged-card":
    guard let c = Conn(host, port) else { fail("connect") }
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
          (try? hs.readMessage(m2)) != nil else { fail("handshake") }
    let payload = HandshakePayload(card: bytes, bootID: Sodium.randomBytes(16)).encoded()
    guard let m3 = try? hs.writeMessage(payload: payload) else { fail("m3") }
    c.sendFrame(m3)
    emit(c.closedByPeer() ? "closed" : "open")
case "replay", "reorder":
    guard let c = Conn(host, port, timeoutMs: 5000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard var est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "replayer-\(Int.random(in: 0..<1_000_000))")) else { fail("handshake refused") }
    let m1 = try! est.transport.seal(AppRecord.ping(1).encoded())
    let m2 = try! est.transport.seal(AppRecord.ping(2).encoded())
    if mode == "replay" {
        c.sendFrame(m1)
        guard let pong = c.recvFrame(), (try? est.transport.open(pong)) != nil else { fail("no pong to the first ping") }
        c.sendFrame(m1)
    } else {
        c.sendFrame(m2)
    }
    emit(c.closedByPeer() ? "closed" : "open")
case "honest":
    guard let c = Conn(host, port, timeoutMs: 5000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    let name = args.count > 2 ? args[2] : "honest"
    guard var est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: name)) else { fail("refused") }
    c.sendFrame(try! est.transport.seal(AppRecord.ping(7).encoded()))
    // The node may send records of its own first (listenPorts): read a few frames.
    var d = RecordStreamDecoder()
    for _ in 0..<4 {
        guard let f = c.recvFrame(), let p = try? est.transport.open(f) else { break }
        d.append(p)
        while let r = try? d.next() { if case .pong(7) = r { print("OK"); exit(0) } }
    }
    emit("no pong")
case "room-flood":
    let rooms = n
    let changes = args.count > 3 ? Int(args[3]) ?? 0 : 0
    guard rooms >= 1, rooms <= 10_000, changes >= 0, changes <= 10_000 else { fail("ROOMS 1...10000, OPS 0...10000") }
    // The victim answers only after storing every operation of a read (two fsyncs each, up
    // to ~1,400 of them): on a loaded 2-core machine that is well over 10 s of silence, which
    // is the daemon working, not the daemon gone. The test's own limit bounds the wait.
    guard let c = Conn(host, port, timeoutMs: 90_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard var est = handshake(c, identity: id, staticKey: st,
                              card: issue(id, noise: st.publicKey, name: "roomflood-\(Int.random(in: 0..<1_000_000))")) else {
        fail("handshake refused")
    }
    let victim = est.remoteCard.identityKey
    let now = UInt64(Date().timeIntervalSince1970)
    var encoder = RecordStreamEncoder()
    func flush() -> Bool {
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else { return false }
        }
        return true
    }
    var first: RoomOperation?
    for i in 0..<rooms {
        // Force-try: a create with a fresh id, a short name and two members is always valid.
        let op = try! RoomOperation.create(roomID: RoomID.random(), name: "flood\(i)", members: [victim], by: id, createdAt: now)
        if first == nil { first = op }
        encoder.append(.roomOperation(op))
        if i % 64 == 63, !flush() { emit("closed"); exit(0) }
    }
    // A chain of changes in the first room: random keys added, then removed, and so on.
    var head = first!
    var added: [IdentityPublicKey] = []
    for i in 0..<changes {
        let change: RoomOperation.Change
        if i % 2 == 0 {
            let k = IdentityKeyPair.generate().publicKey
            added.append(k)
            change = .add(k)
        } else {
            change = .remove(added.removeLast())
        }
        head = try! RoomOperation.change(change, roomID: head.roomID, after: [head], by: id, createdAt: now)
        encoder.append(.roomOperation(head))
        if i % 64 == 63, !flush() { emit("closed"); exit(0) }
    }
    encoder.append(.ping(99))
    guard flush() else { emit("closed"); exit(0) }
    // Alive if the pong comes back (acks for the operations may come first).
    var decoder = RecordStreamDecoder()
    while let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { break }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .pong(99) = r { emit("alive"); exit(0) }
        }
    }
    emit("closed")
case "old-peer":
    guard let c = Conn(host, port, timeoutMs: 1_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard var est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "oldie")) else {
        fail("handshake refused")
    }
    var encoder = RecordStreamEncoder()
    func flush() {
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else { emit("closed"); exit(0) }
        }
    }
    encoder.append(.chat(ChatRecord(id: .random(), sequence: 1, createdAt: UInt64(Date().timeIntervalSince1970) * 1000,
                                    body: "hello from an old node")))
    flush()
    emit("sent")
    let deadline = Date().addingTimeInterval(Double(max(1, min(n, 60))))
    var decoder = RecordStreamDecoder()
    while Date() < deadline {
        let asked = Date()
        guard let f = c.recvFrame() else {
            // A 1 s receive timeout: look at the clock again. Nil at once: the peer closed.
            if Date().timeIntervalSince(asked) < 0.5 { emit("closed"); exit(0) }
            continue
        }
        guard let p = try? est.transport.open(f) else { emit("closed"); exit(0) }
        decoder.append(p)
        while let r = try? decoder.next() {
            switch r {
            case .chat(let chat):
                emit("chat \(chat.body)" + (chat.replyTo == nil ? "" : " (reply)"))
                encoder.append(.ack([chat.id]))
            case .ping(let v): encoder.append(.pong(v))
            case .messageAction(let a): emit("record 0x\(String(a.recordTypeByte, radix: 16))")
            case .status: emit("record 0x0d")
            case .unknown(let type, _) where type >= 0x09: emit("record 0x\(String(type, radix: 16))")
            default: break
            }
        }
        flush()
    }
    emit("done")
case "forge-action":
    guard args.count > 2, let target = MessageID(hex: args[2]) else { fail("MSGID: 32 hex digits") }
    guard let c = Conn(host, port, timeoutMs: 30_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard var est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "mallory"),
                              features: .supported) else { fail("handshake refused") }
    let now = UInt64(Date().timeIntervalSince1970) * 1000
    let own = MessageID.random()
    var records: [AppRecord] = [
        .chat(ChatRecord(id: own, sequence: 1, createdAt: now, body: "mallory original")),
        .messageAction(MessageActionRecord(id: .random(), sequence: 2, createdAt: now, target: target,
                                           action: .edit(body: "forged by mallory"))),
        .messageAction(MessageActionRecord(id: .random(), sequence: 3, createdAt: now, target: target, action: .delete)),
        .messageAction(MessageActionRecord(id: .random(), sequence: 4, createdAt: now, target: target,
                                           action: .reaction(try! Reaction("💩"), added: true))),
        .messageAction(MessageActionRecord(id: .random(), sequence: 5, createdAt: now, target: own,
                                           action: .edit(body: "mallory edited"))),
    ]
    // With ROOMID: the same three changes of MSGID as a room message, from a non-member.
    if args.count > 3, let room = RoomID(hex: args[3]) {
        records += [
            .messageAction(MessageActionRecord(id: .random(), sequence: 6, createdAt: now, target: target,
                                               action: .edit(body: "forged by mallory"), room: room)),
            .messageAction(MessageActionRecord(id: .random(), sequence: 7, createdAt: now, target: target,
                                               action: .delete, room: room)),
            .messageAction(MessageActionRecord(id: .random(), sequence: 8, createdAt: now, target: target,
                                               action: .reaction(try! Reaction("💩"), added: true), room: room)),
        ]
    }
    let expected = records.count
    records.append(.ping(5))
    var encoder = RecordStreamEncoder()
    records.forEach { encoder.append($0) }
    for chunk in encoder.drainChunks() {
        guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else { emit("closed"); exit(0) }
    }
    // The pong leaves at once, the acks after the records are stored: wait for both.
    var acked = Set<MessageID>()
    var ponged = false
    var decoder = RecordStreamDecoder()
    while let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { break }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .ack(let ids) = r { acked.formUnion(ids) }
            if case .pong(5) = r { ponged = true }
        }
        if ponged, acked.count >= expected { break }
    }
    emit("acked \(acked.count)")
    emit(ponged ? "alive" : "closed")
default:
    fail("unknown mode \(mode)")
}
