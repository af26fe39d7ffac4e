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

var args = Array(CommandLine.arguments.dropFirst())
guard args.count >= 2 else {
    print(
        """
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
          chat-flood T COUNT SIZE  as a new peer, stream COUNT chats of SIZE bytes (at most 65536),
                                reading the answers as they come; print "acked A refused R
                                reasons X,Y" once every chat is answered (or 120 s passed)
          identities T N SOURCES [HOLD]  N connections, each a fresh identity completing the handshake,
                                from 127.0.1.1 ... 127.0.1.SOURCES in turn (SOURCES 0: from the
                                usual address), or from the addresses of SOURCES in turn when it
                                is a comma-separated list (the lab host's own IPv4/IPv6 addresses);
                                all are held HOLD seconds (default 1) after the last; print
                                "connected C failed F" once all were tried, then "established E
                                refused R failed F" (E: still open after HOLD)
          ping-flood T SECS     as a new peer with a 4 KiB receive buffer that never reads, send
                                frames of ~5,000 pings each for SECS seconds; print the MiB the
                                victim took and whether it closed the session
          room-flood T ROOMS OPS  as a new (pinned) peer, send signed creates of ROOMS rooms
                                naming the target as member, then OPS add/remove changes in
                                the first room; ping; print "alive" or "closed"
          room-member T SEED NAME ACTION [ROOM]
                                as a room member with a fixed identity (SEED: 64 hex digits),
                                take the room operations the target sends, then ACTION:
                                  hello   nothing more (the target pins the card)
                                  join    accept every invitation; print "joined ROOMID"
                                  takeover  after its removal from ROOM: back-dated operations
                                          (remove the creator, promote itself, add a key of
                                          its own, join as that key) and a room message
                                  backdate  remove every other member with parents = the root
                                  squat   a create whose nonce is ROOM's id, naming the target
                                  junk N  N operations in ROOM with random parents
                                  reverse N  N valid adds in a chain, sent children first
                                  early-chat ALICE  a room message to the target before its
                                          join reached it (print "held" if not acknowledged),
                                          then the join to ALICE (HOST:PORT) only; print
                                          "acked-after-join" once the target acknowledges
                                print what it sent, then "acked K" (operations acknowledged)
          forge-address T VICTIM ADDR  as a new peer announcing address gossip, send a signed
                                address record naming VICTIM (identity, 64 hex digits) at ADDR
                                (HOST:PORT) but signed with its own key; then a ping; print
                                "closed" if the target ended the session, else "alive"
          sign-address KEYFILE MS ADDR  no target: print (hex) an address record of the identity in
                                KEYFILE (an identity.key) at ADDR (HOST:PORT), dated MS (Unix ms)
          dial-back T PORT N    as a new peer announcing address gossip, ask N times to be dialled
                                back at PORT (of the adversary's own host: the request has no host);
                                print the outcomes in order ("connected", "failed", "refused")
          tags-probe T VICTIM   as a new peer announcing address gossip, send a chat, then contact
                                tags naming VICTIM (identity, 64 hex digits), then a ping; print
                                "record" if an address record about VICTIM came before the pong,
                                else "nothing"
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
          file T ATTACK         as a new (pinned) peer announcing files, offer a 3-chunk file
                                and serve the target's fileWants (accept it within 60 s):
                                  honest      the real thing
                                  traversal   named "../../etc/passwd"
                                  control     a name with escape, newline, bidi controls and
                                              a Windows device name ("CON.txt" after them)
                                  huge        an offer of 2^63 bytes (answered at once)
                                  corrupt-once  chunk 1 wrong the first time, right when re-fetched
                                  corrupt     chunk 1 wrong every time
                                  bigger      chunk 0 longer than the chunk size
                                  lying-hash  every chunk matches its hash, the whole-file hash is wrong
                                print "offered ID", "want FROM" for each want, then "end OUTCOME
                                TEXT" or "closed"
        """)
    exit(2)
}
let mode = args[0]
if mode == "sign-address" {
    // Not an attack on a daemon: a record as its owner would sign it, dated ISSUED_MS (a test
    // plants a stale one in a relay's store to see it is not passed on).
    guard args.count == 4, let issued = UInt64(args[2]),
        let file = FileManager.default.contents(atPath: args[1]).map({ [UInt8]($0) }),
        let newline = file.firstIndex(of: UInt8(ascii: "\n")),
        let seed = SecretBytes(hex: file[(newline + 1)..<max(newline + 1, file.count - 1)], count: 32),
        let identity = try? IdentityKeyPair(seed: seed)
    else { fail("usage: sign-address IDENTITY-KEY-FILE ISSUED_MS HOST:PORT") }
    let (h, p) = parseTarget(args[3])
    guard let endpoint = SignedAddressRecord.Endpoint(host: h, port: p) else { fail("HOST: an IP literal") }
    print(Sodium.hex(try! SignedAddressRecord(signing: [endpoint], issuedAt: issued, with: identity).encoded()))
    exit(0)
}
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
    for _ in 0..<n {
        if let c = Conn(host, port) {
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
case "frame-silence":
    guard let c = Conn(host, port, timeoutMs: Int((Double(n == 0 ? 10 : n)) * 1000)) else { fail("connect") }
    let t0 = Date()
    c.send([0xff, 0xff])
    let closed = c.closedByPeer()
    emit(closed ? String(format: "closed after %.1f s", Date().timeIntervalSince(t0)) : "open")
case "flood":
    var accepted = 0
    var refused = 0
    let deadline = Date().addingTimeInterval(60)
    for _ in 0..<n {
        if Date() > deadline { break }
        if let c = Conn(host, port, timeoutMs: 500) {
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
        (try? hs.readMessage(m2)) != nil
    else { fail("handshake") }
    let payload = HandshakePayload(card: bytes, bootID: Sodium.randomBytes(16)).encoded()
    guard let m3 = try? hs.writeMessage(payload: payload) else { fail("m3") }
    c.sendFrame(m3)
    emit(c.closedByPeer() ? "closed" : "open")
case "replay", "reorder":
    guard let c = Conn(host, port, timeoutMs: 5000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st,
            card: issue(id, noise: st.publicKey, name: "replayer-\(Int.random(in: 0..<1_000_000))"))
    else { fail("handshake refused") }
    let m1 = try! est.transport.seal(AppRecord.ping(1).encoded())
    let m2 = try! est.transport.seal(AppRecord.ping(2).encoded())
    if mode == "replay" {
        c.sendFrame(m1)
        guard let pong = c.recvFrame(), (try? est.transport.open(pong)) != nil else {
            fail("no pong to the first ping")
        }
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
    guard var est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: name)) else {
        fail("refused")
    }
    c.sendFrame(try! est.transport.seal(AppRecord.ping(7).encoded()))
    // The node may send records of its own first (listenPorts): read a few frames.
    var d = RecordStreamDecoder()
    for _ in 0..<4 {
        guard let f = c.recvFrame(), let p = try? est.transport.open(f) else { break }
        d.append(p)
        while let r = try? d.next() {
            if case .pong(7) = r {
                print("OK")
                exit(0)
            }
        }
    }
    emit("no pong")
case "chat-flood":
    let size = args.count > 3 ? Int(args[3]) ?? 0 : 0
    guard n >= 1, n <= 1_000_000, size >= 1, size <= WireLimits.maxBodyBytes else {
        fail("COUNT 1...1000000, SIZE 1...65536")
    }
    guard let c = Conn(host, port, timeoutMs: 10_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st,
            card: issue(id, noise: st.publicKey, name: "hoarder-\(Int.random(in: 0..<1_000_000))"))
    else {
        fail("handshake refused")
    }
    let body = String(repeating: "x", count: size)
    var acked = Set<[UInt8]>()
    var refused = Set<[UInt8]>()
    var reasons = Set<String>()
    var decoder = RecordStreamDecoder()
    var closed = false
    /// Reads what has arrived; with `wait`, waits up to that long for something.
    func drain(waitMs: Int32) {
        var pfd = pollfd(fd: c.fd, events: Int16(POLLIN), revents: 0)
        var timeout = waitMs
        while !closed, poll(&pfd, 1, timeout) > 0 {
            timeout = 0
            guard let f = c.recvFrame(), let p = try? est.transport.open(f) else {
                closed = true
                return
            }
            decoder.append(p)
            while let r = try? decoder.next() {
                switch r {
                case .ack(let ids): for i in ids { acked.insert(i.bytes) }
                case let .refused(reason, ids):
                    reasons.insert("\(reason)")
                    for i in ids { refused.insert(i.bytes) }
                case .close: closed = true
                default: break
                }
            }
        }
    }
    var encoder = RecordStreamEncoder()
    let start = Date()
    for k in 0..<n {
        encoder.append(
            .chat(
                ChatRecord(
                    id: MessageID.random(), sequence: UInt64(k + 1),
                    createdAt: UInt64(Date().timeIntervalSince1970 * 1000), body: body)))
        if k % 16 == 15 || k == n - 1 {
            for chunk in encoder.drainChunks() {
                guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else {
                    closed = true
                    break
                }
            }
            drain(waitMs: 0)
        }
        if closed || Date().timeIntervalSince(start) > 120 { break }
    }
    while !closed, acked.count + refused.count < n, Date().timeIntervalSince(start) < 120 { drain(waitMs: 1000) }
    emit(
        "acked \(acked.count) refused \(refused.count) reasons \(reasons.sorted().joined(separator: ","))"
            + (closed ? " closed" : ""))
case "identities":
    let sourceArgument = args.count > 3 ? args[3] : "0"
    let sourceList: [String]
    if let count = Int(sourceArgument) {
        guard count >= 0, count <= 250 else { fail("SOURCES 0...250 or a list of addresses") }
        sourceList = (0..<count).map { "127.0.1.\(1 + $0)" }
    } else {
        sourceList = sourceArgument.split(separator: ",").map(String.init)
        guard (1...4_096).contains(sourceList.count) else { fail("SOURCES: 1...4096 addresses") }
    }
    guard n >= 1, n <= 10_000 else { fail("N 1...10000") }
    var held: [Conn] = []
    var failed = 0
    let start = Date()
    for i in 0..<n {
        if Date().timeIntervalSince(start) > 150 { break }
        let bind = sourceList.isEmpty ? nil : sourceList[i % sourceList.count]
        guard let c = Conn(host, port, timeoutMs: 3000, bindAddress: bind) else {
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
    let hold = args.count > 4 ? Double(args[4]) ?? 1 : 1
    // A progress line for tests that act while the sessions are held (the last line stays
    // the result).
    emit("connected \(held.count) failed \(failed)")
    // The daemon's refusals (close, then EOF) arrive meanwhile; the rest hold their slots.
    Thread.sleep(forTimeInterval: max(1, min(hold, 60)))
    let closed = held.filter { $0.closedNow() }.count
    emit("established \(held.count - closed) refused \(closed) failed \(failed)")
case "ping-flood":
    let seconds = Double(n == 0 ? 10 : n)
    guard let c = Conn(host, port, timeoutMs: 1000, receiveBuffer: 4096) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st,
            card: issue(id, noise: st.publicKey, name: "pinger-\(Int.random(in: 0..<1_000_000))"))
    else {
        fail("handshake refused")
    }
    // One Noise message of pings (13 bytes each), sealed anew each time (nonces move on).
    var encoder = RecordStreamEncoder()
    var value: UInt64 = 0
    var sent = 0
    var closed = false
    let deadline = Date().addingTimeInterval(seconds)
    flooding: while Date() < deadline {
        for _ in 0..<5_000 {
            value += 1
            encoder.append(.ping(value))
        }
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), let frame = try? Frame.encode(sealed) else {
                fail("seal")
            }
            // The victim may stop reading (that is the point): a send that times out is
            // retried until the deadline, never abandoned half-way (that would break framing).
            var off = 0
            while off < frame.count {
                let r = frame[off...].withUnsafeBytes {
                    Glibc.send(c.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if r > 0 {
                    off += r
                    continue
                }
                if r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    if Date() >= deadline { break flooding }
                    continue
                }
                closed = true
                break flooding
            }
            sent += frame.count
        }
    }
    if !closed {
        // Still open, or closed by the victim with nothing read? A reset or EOF says closed.
        var b = [UInt8](repeating: 0, count: 1)
        let r = b.withUnsafeMutableBytes { Glibc.recv(c.fd, $0.baseAddress, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK)) }
        closed = r == 0 || (r < 0 && errno == ECONNRESET)
    }
    emit(String(format: "sent %.1f MiB", Double(sent) / 1_048_576) + (closed ? " closed" : " open"))
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
    guard
        var est = handshake(
            c, identity: id, staticKey: st,
            card: issue(id, noise: st.publicKey, name: "roomflood-\(Int.random(in: 0..<1_000_000))"))
    else {
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
        let op = try! RoomOperation.create(name: "flood\(i)", members: [victim], by: id, createdAt: now)
        if first == nil { first = op }
        encoder.append(.roomOperation(op))
        if i % 64 == 63, !flush() {
            emit("closed")
            exit(0)
        }
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
        if i % 64 == 63, !flush() {
            emit("closed")
            exit(0)
        }
    }
    encoder.append(.ping(99))
    guard flush() else {
        emit("closed")
        exit(0)
    }
    // Alive if the pong comes back (acks for the operations may come first).
    var decoder = RecordStreamDecoder()
    while let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { break }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .pong(99) = r {
                emit("alive")
                exit(0)
            }
        }
    }
    emit("closed")
case "room-member":
    guard args.count >= 5, let seedBytes = Sodium.fromHex(args[2]), seedBytes.count == 32 else {
        fail("room-member T SEED(64 hex) NAME ACTION [ROOM] [N]")
    }
    var seedCopy = seedBytes
    let id = try! IdentityKeyPair(seed: SecretBytes(consuming: &seedCopy))  // 32 bytes: checked above
    let action = args[4]
    let roomArg = args.count > 5 ? RoomID(hex: args[5]) : nil
    var member = RoomMember(host: host, port: port, identity: id, name: args[3])
    // PARLEY_ADVERSARY_STATE: a file of the room operations seen so far (hex, one a line),
    // so a later run (after its removal, say) can sign "from the past".
    let statePath = ProcessInfo.processInfo.environment["PARLEY_ADVERSARY_STATE"]
    if let statePath, let text = try? String(contentsOfFile: statePath, encoding: .utf8) {
        for line in text.split(separator: "\n") {
            if let bytes = Sodium.fromHex(String(line)), let op = try? RoomOperation.decode(bytes) {
                member.pendingOps.append(op)
            }
        }
    }
    member.takeTraffic()
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    func room() -> (root: RoomOperation, ops: [RoomOperation], state: RoomState) {
        guard let roomArg, let (root, ops) = member.room(roomArg),
            let state = RoomResolver.resolve(root: root, operations: ops)
        else { fail("room \(args.count > 5 ? args[5] : "?") not received") }
        return (root, ops, state)
    }
    var sent: [RoomOperation] = []
    switch action {
    case "hello":
        emit("hello")
    case "join":
        emit("rooms \(member.rooms.count)")
        for (rid, (root, ops)) in member.rooms {
            guard let state = RoomResolver.resolve(root: root, operations: ops), state.isInvited(id.publicKey) else {
                continue
            }
            let join = try! RoomOperation.change(.join, roomID: rid, after: state.heads, by: id, createdAt: now)
            sent.append(join)
            emit("joined \(rid.hex)")
        }
    case "takeover":
        let (root, ops, state) = room()
        guard !state.isMember(id.publicKey) else { fail("still a member: remove it first") }
        // Everything is signed on top of its own join, i.e. "before" its removal.
        guard let myJoin = ops.first(where: { $0.actor == id.publicKey && $0.kind == .join }) else {
            fail("never joined")
        }
        let puppet = IdentityKeyPair.generate()
        let rid = root.roomID
        let kick = try! RoomOperation.change(.remove(root.actor), roomID: rid, after: [myJoin], by: id, createdAt: now)
        let promote = try! RoomOperation.change(
            .setRole(id.publicKey, .owner), roomID: rid, after: [myJoin], by: id, createdAt: now)
        let add = try! RoomOperation.change(
            .add(puppet.publicKey), roomID: rid, after: [myJoin], by: id, createdAt: now)
        let puppetJoin = try! RoomOperation.change(.join, roomID: rid, after: [add], by: puppet, createdAt: now)
        sent = [kick, promote, add, puppetJoin]
        emit("puppet \(Fingerprint(puppet.publicKey).description)")
        member.chat(rid, "mallory is still here")
    case "backdate":
        let (root, _, state) = room()
        for m in state.members where m != id.publicKey {
            sent.append(
                try! RoomOperation.change(.remove(m), roomID: root.roomID, after: [root], by: id, createdAt: now))
        }
    case "squat":
        guard let roomArg else { fail("squat needs ROOM") }
        let fake = try! RoomOperation.create(
            name: "squat", members: [member.remote], by: id, createdAt: now, nonce: roomArg)
        // And an operation that claims the real room id on top of the fake create.
        let claim = try! RoomOperation.change(
            .add(IdentityKeyPair.generate().publicKey), roomID: roomArg, after: [fake],
            by: id, createdAt: now)
        sent = [fake, claim]
        emit("fake \(fake.roomID.hex)")
    case "junk":
        guard let roomArg else { fail("junk needs ROOM") }
        let n = args.count > 6 ? Int(args[6]) ?? 255 : 255
        let (root, _, _) = room()
        for _ in 0..<n {
            // A random parent the target never has: it waits, and must not block the room.
            let fakeParent = try! RoomOperation.change(
                .add(IdentityKeyPair.generate().publicKey), roomID: roomArg,
                after: [root], by: IdentityKeyPair.generate(), createdAt: now)
            sent.append(
                try! RoomOperation.change(
                    .add(IdentityKeyPair.generate().publicKey), roomID: roomArg,
                    after: [fakeParent], by: id, createdAt: now))
        }
    case "reverse":
        // A valid chain of N adds (keys that never answer), sent children first: each
        // waits for its parent until the first arrives last.
        let n = args.count > 6 ? Int(args[6]) ?? 20 : 20
        let (root, _, state) = room()
        var head = state.heads
        var chain: [RoomOperation] = []
        for _ in 0..<n {
            let op = try! RoomOperation.change(
                .add(IdentityKeyPair.generate().publicKey), roomID: root.roomID,
                after: head, by: id, createdAt: now)
            chain.append(op)
            head = [op]
        }
        sent = chain.reversed()
    case "early-chat":
        guard args.count > 6 else { fail("early-chat ROOM ALICE") }
        let (root, ops, state) = room()
        guard state.isInvited(id.publicKey) else { fail("not invited to the room") }
        let chatID = MessageID.random()
        member.send(
            .roomChat(
                RoomChatRecord(
                    id: chatID, roomID: root.roomID, sequence: 1_000_001,
                    createdAt: now, body: "early")))
        emit(member.awaitAcks([chatID], seconds: 2) == 0 ? "held" : "acknowledged at once")
        let join = try! RoomOperation.change(.join, roomID: root.roomID, after: state.heads, by: id, createdAt: now)
        let (aliceHost, alicePort) = parseTarget(args[6])
        var other = RoomMember(host: aliceHost, port: alicePort, identity: id, name: args[3])
        other.takeTraffic()
        other.send(.roomOperation(join))
        _ = other.awaitAcks([join.hash.ackID])
        emit(member.awaitAcks([chatID], seconds: 20) == 1 ? "acked-after-join" : "never-acked")
        _ = ops
    default:
        fail("unknown room-member action \(action)")
    }
    for op in sent { member.send(.roomOperation(op)) }
    emit("sent \(sent.count)")
    if let statePath {
        let all = member.rooms.values.flatMap { [$0.0] + $0.1 } + sent
        try? all.map { Sodium.hex($0.encoded()) }.joined(separator: "\n").write(
            toFile: statePath, atomically: true, encoding: .utf8)
    }
    emit("acked \(member.awaitAcks(sent.map(\.hash.ackID)))")
case "old-peer":
    guard let c = Conn(host, port, timeoutMs: 1_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard var est = handshake(c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "oldie"))
    else {
        fail("handshake refused")
    }
    var encoder = RecordStreamEncoder()
    func flush() {
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else {
                emit("closed")
                exit(0)
            }
        }
    }
    encoder.append(
        .chat(
            ChatRecord(
                id: .random(), sequence: 1, createdAt: UInt64(Date().timeIntervalSince1970) * 1000,
                body: "hello from an old node")))
    flush()
    emit("sent")
    let deadline = Date().addingTimeInterval(Double(max(1, min(n, 60))))
    var decoder = RecordStreamDecoder()
    while Date() < deadline {
        let asked = Date()
        guard let f = c.recvFrame() else {
            // A 1 s receive timeout: look at the clock again. Nil at once: the peer closed.
            if Date().timeIntervalSince(asked) < 0.5 {
                emit("closed")
                exit(0)
            }
            continue
        }
        guard let p = try? est.transport.open(f) else {
            emit("closed")
            exit(0)
        }
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
    guard
        var est = handshake(
            c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "mallory"),
            features: .supported)
    else { fail("handshake refused") }
    let now = UInt64(Date().timeIntervalSince1970) * 1000
    let own = MessageID.random()
    var records: [AppRecord] = [
        .chat(ChatRecord(id: own, sequence: 1, createdAt: now, body: "mallory original")),
        .messageAction(
            MessageActionRecord(
                id: .random(), sequence: 2, createdAt: now, target: target,
                action: .edit(body: "forged by mallory"))),
        .messageAction(
            MessageActionRecord(id: .random(), sequence: 3, createdAt: now, target: target, action: .delete)),
        .messageAction(
            MessageActionRecord(
                id: .random(), sequence: 4, createdAt: now, target: target,
                action: .reaction(try! Reaction("💩"), added: true))),
        .messageAction(
            MessageActionRecord(
                id: .random(), sequence: 5, createdAt: now, target: own,
                action: .edit(body: "mallory edited")))
    ]
    // With ROOMID: the same three changes of MSGID as a room message, from a non-member.
    if args.count > 3, let room = RoomID(hex: args[3]) {
        records += [
            .messageAction(
                MessageActionRecord(
                    id: .random(), sequence: 6, createdAt: now, target: target,
                    action: .edit(body: "forged by mallory"), room: room)),
            .messageAction(
                MessageActionRecord(
                    id: .random(), sequence: 7, createdAt: now, target: target,
                    action: .delete, room: room)),
            .messageAction(
                MessageActionRecord(
                    id: .random(), sequence: 8, createdAt: now, target: target,
                    action: .reaction(try! Reaction("💩"), added: true), room: room))
        ]
    }
    let expected = records.count
    records.append(.ping(5))
    var encoder = RecordStreamEncoder()
    records.forEach { encoder.append($0) }
    for chunk in encoder.drainChunks() {
        guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else {
            emit("closed")
            exit(0)
        }
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
case "file":
    guard args.count > 2 else { fail("ATTACK") }
    runFileAttack(args[2], host: host, port: port)
case "dial-back":
    guard args.count > 3, let backPort = UInt16(args[2]), let count = Int(args[3]), (1...20).contains(count) else {
        fail("PORT N (1...20)")
    }
    guard let c = Conn(host, port, timeoutMs: 15_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "mallory"),
            features: .supported)
    else { fail("handshake refused") }
    var encoder = RecordStreamEncoder()
    for n in 1...count { encoder.append(.dialBackRequest(DialBackRequest(nonce: UInt64(n), port: backPort)!)) }
    for chunk in encoder.drainChunks() {
        guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else { fail("closed") }
    }
    var outcomes: [UInt64: String] = [:]
    var decoder = RecordStreamDecoder()
    while outcomes.count < count, let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { break }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .dialBackResult(let result) = r { outcomes[result.nonce] = "\(result.outcome)" }
        }
    }
    emit((1...count).map { outcomes[UInt64($0)] ?? "none" }.joined(separator: " "))
case "tags-probe":
    guard args.count > 2, let victimBytes = Sodium.fromHex(args[2]),
        let victim = try? IdentityPublicKey(bytes: victimBytes)
    else { fail("VICTIM: 64 hex digits") }
    guard let c = Conn(host, port, timeoutMs: 15_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "mallory"),
            features: .supported)
    else { fail("handshake refused") }
    // The chat first, and its acknowledgement awaited: it is stored before the tags come
    // (a node that counted any message as a contact would now count Mallory).
    var decoder = RecordStreamDecoder()
    func send(_ records: [AppRecord]) {
        var encoder = RecordStreamEncoder()
        records.forEach { encoder.append($0) }
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else { fail("closed") }
        }
    }
    let chatID = MessageID.random()
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    send([.chat(ChatRecord(id: chatID, sequence: 1, createdAt: now, body: "hi, we met before"))])
    var told = false
    acked: while let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { fail("closed") }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .ack(let ids) = r, ids.contains(chatID) { break acked }
        }
    }
    send([.contactTags(ContactTags(salt: Sodium.randomBytes(ContactTags.saltLength), identities: [victim])), .ping(11)])
    reading: while let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { break }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .addressRecord(let rec) = r, rec.identity == victim { told = true }
            if case .pong(11) = r { break reading }
        }
    }
    emit(told ? "record" : "nothing")
case "forge-address":
    guard args.count > 3, let victimBytes = Sodium.fromHex(args[2]), victimBytes.count == 32 else {
        fail("VICTIM: 64 hex digits")
    }
    let (vHost, vPort) = parseTarget(args[3])
    guard let c = Conn(host, port, timeoutMs: 10_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "mallory"),
            features: .supported)
    else { fail("handshake refused") }
    let now = UInt64(Date().timeIntervalSince1970 * 1000)
    guard let endpoint = SignedAddressRecord.Endpoint(host: vHost, port: vPort) else { fail("ADDR: an IP literal") }
    // Mallory signs, then swaps in the victim's identity: the relay of a "record" that
    // would send the target's dials for the victim to Mallory's choice of host.
    var forged = try! SignedAddressRecord(signing: [endpoint], issuedAt: now, with: id).encoded()
    forged.replaceSubrange(1..<33, with: victimBytes)
    var stream: [UInt8] = [AppRecord.RecordType.addressRecord.rawValue]
    stream.appendUInt32BE(UInt32(forged.count))
    stream += forged
    stream += AppRecord.ping(9).encoded()
    guard let sealed = try? est.transport.seal(stream), c.sendFrame(sealed) else {
        emit("closed")
        exit(0)
    }
    var decoder = RecordStreamDecoder()
    while let f = c.recvFrame() {
        guard let p = try? est.transport.open(f) else { break }
        decoder.append(p)
        while let r = try? decoder.next() {
            if case .pong(9) = r {
                emit("alive")
                exit(0)
            }
        }
    }
    emit("closed")
default:
    fail("unknown mode \(mode)")
}

/// `file T ATTACK`: a hostile (or, with `honest`, a correct) file sender.
func runFileAttack(_ attack: String, host: String, port: UInt16) {
    guard let c = Conn(host, port, timeoutMs: 60_000) else { fail("connect") }
    let id = IdentityKeyPair.generate()
    let st = NoiseStaticKeyPair.generate()
    guard
        var est = handshake(
            c, identity: id, staticKey: st, card: issue(id, noise: st.publicKey, name: "mallory"),
            features: .supported)
    else { fail("handshake refused") }
    let chunkSize = 4_096
    var content = Sodium.randomBytes(chunkSize * 2 + 1_000)
    let chunks = stride(from: 0, to: content.count, by: chunkSize).map {
        Array(content[$0..<min($0 + chunkSize, content.count)])
    }
    let hashes = chunks.map { FileHash.of($0) }
    var contentHash = FileHash.of(content)
    if attack == "lying-hash" { contentHash[0] ^= 1 }
    let names = [
        "traversal": "../../etc/passwd", "control": "\u{1B}[31mred\nline\u{202E}txt.exe/CON.txt"
    ]
    let transfer = TransferID.random()
    let offer = FileOffer(
        transfer: transfer, size: attack == "huge" ? 1 << 63 : UInt64(content.count), chunkSize: UInt32(chunkSize),
        contentHash: contentHash, listHash: FileHash.listHash(hashes), name: names[attack] ?? "honest.bin",
        mediaType: "application/octet-stream")
    content.removeAll()
    func send(_ records: [AppRecord]) {
        var encoder = RecordStreamEncoder()
        records.forEach { encoder.append($0) }
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), c.sendFrame(sealed) else {
                emit("closed")
                exit(0)
            }
        }
    }
    send([.file(.offer(offer))])
    emit("offered \(transfer.hex)")
    var decoder = RecordStreamDecoder()
    var corruptSent = 0
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline {
        guard let f = c.recvFrame() else {
            emit("closed")
            exit(0)
        }
        guard let p = try? est.transport.open(f) else { fail("transport") }
        decoder.append(p)
        while let r = try? decoder.next() {
            switch r {
            case .ping(let v):
                send([.pong(v)])
            case .close:
                emit("closed")
                exit(0)
            case let .file(.want(_, from, needList)):
                emit("want \(from)")
                var out: [AppRecord] = []
                if needList { out.append(.file(.hashes(transfer, first: 0, hashes: hashes))) }
                for i in Int(from)..<chunks.count {
                    var data = chunks[i]
                    if i == 1 && (attack == "corrupt" || (attack == "corrupt-once" && corruptSent == 0)) {
                        data[0] ^= 0xFF
                        corruptSent += 1
                    }
                    if i == 0 && attack == "bigger" { data += [0, 0, 0] }
                    out.append(.file(.chunk(transfer, index: UInt64(i), data: data)))
                }
                send(out)
            case let .file(.end(_, outcome, text)):
                emit("end \(outcome) \(text)")
                exit(0)
            default:
                break
            }
        }
    }
    emit("timeout")
}

/// A room member speaking the real protocol: handshake with a fixed identity, every
/// record it receives acknowledged like a node would, the room operations kept.
struct RoomMember {
    let conn: Conn
    var est: SessionHandshake.Established
    let identity: IdentityKeyPair
    var decoder = RecordStreamDecoder()
    var rooms: [RoomID: (RoomOperation, [RoomOperation])] = [:]
    var pendingOps: [RoomOperation] = []
    var acked: Set<MessageID> = []
    var remote: IdentityPublicKey { est.remoteCard.identityKey }

    init(host: String, port: UInt16, identity: IdentityKeyPair, name: String) {
        guard let c = Conn(host, port, timeoutMs: 1500) else { fail("connect") }
        // The same Noise key on every run (derived from the identity's public key), so the
        // card the target pinned the first time stays the one it sees.
        var noiseSeed = Sodium.sha256(Array("parley-adversary-noise\0".utf8), identity.publicKey.bytes)
        let st = try! NoiseStaticKeyPair(privateKey: SecretBytes(consuming: &noiseSeed))  // 32 bytes
        // And the same card: issued at the start of the day, sequence 1.
        let day = UInt64(Date().timeIntervalSince1970) / 86_400 * 86_400
        let card = try! Card.issue(
            identity: identity, noiseKey: st.publicKey, displayName: name, hostName: "adversary",
            issuedAt: day, sequence: 1)  // fixed valid inputs
        guard let est = handshake(c, identity: identity, staticKey: st, card: card) else {
            fail("handshake refused")
        }
        self.conn = c
        self.est = est
        self.identity = identity
    }

    func room(_ id: RoomID) -> (RoomOperation, [RoomOperation])? { rooms[id] }

    mutating func send(_ records: AppRecord...) {
        var encoder = RecordStreamEncoder()
        for r in records { encoder.append(r) }
        for chunk in encoder.drainChunks() {
            guard let sealed = try? est.transport.seal(chunk), conn.sendFrame(sealed) else { fail("send") }
        }
    }

    mutating func chat(_ room: RoomID, _ body: String) {
        send(
            .roomChat(
                RoomChatRecord(
                    id: MessageID.random(), roomID: room, sequence: 1_000_000,
                    createdAt: UInt64(Date().timeIntervalSince1970 * 1000), body: body)))
    }

    /// Reads until the target has been silent for the receive timeout, acknowledging
    /// operations and messages as a node would, and keeping the operations by room.
    mutating func takeTraffic() {
        // Until the target has sent nothing but pings for 1.5 s (a daemon with a short ping
        // interval never falls silent), and 15 s at most.
        let start = Date()
        var lastUseful = Date()
        while Date().timeIntervalSince(lastUseful) < 1.5, Date().timeIntervalSince(start) < 15, let f = conn.recvFrame()
        {
            guard let p = try? est.transport.open(f) else { fail("transport") }
            decoder.append(p)
            var acks: [MessageID] = []
            while let r = try? decoder.next() {
                switch r {
                case .roomOperation(let op):
                    acks.append(op.hash.ackID)
                    pendingOps.append(op)
                case .roomChat(let c):
                    acks.append(c.id)
                case .chat(let c):
                    acks.append(c.id)
                case .ping(let v):
                    send(.pong(v))
                case .ack(let ids):
                    acked.formUnion(ids)
                default:
                    break
                }
            }
            if !acks.isEmpty {
                send(.ack(acks))
                lastUseful = Date()
            }
        }
        for op in pendingOps where op.kind == .create { rooms[op.roomID] = (op, []) }
        for op in pendingOps where op.kind != .create && rooms[op.roomID]?.1.contains(op) == false {
            rooms[op.roomID]?.1.append(op)
        }
        pendingOps.removeAll()
    }

    /// How many of `ids` the target acknowledged (an ack is sent for refused operations too).
    mutating func awaitAcks(_ ids: [MessageID], seconds: Double = 10) -> Int {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, !Set(ids).isSubset(of: acked) {
            guard let f = conn.recvFrame(), let p = try? est.transport.open(f) else { continue }
            decoder.append(p)
            while let r = try? decoder.next() {
                if case .ack(let got) = r { acked.formUnion(got) }
                if case .ping(let v) = r { send(.pong(v)) }
            }
        }
        return Set(ids).intersection(acked).count
    }
}

extension Array where Element == UInt8 {
    mutating func appendUInt32BE(_ v: UInt32) {
        append(contentsOf: [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)])
    }
}
