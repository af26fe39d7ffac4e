// Modes that flood an established session: chats from a stranger (quotas), pings into a
// victim that never reads (send buffers), and room operations (the room store's bounds).
import Foundation
import ParleyCore

#if canImport(Glibc)
    import Glibc
#endif

/// `chat-flood T COUNT SIZE`: COUNT chats of SIZE bytes from a new peer, the answers read
/// as they come.
func runChatFlood(_ a: ModeArguments) {
    let n = a.n
    let size = a.int(3, default: 0)
    guard n >= 1, n <= 1_000_000, size >= 1, size <= WireLimits.maxBodyBytes else {
        fail("COUNT 1...1000000, SIZE 1...65536")
    }
    var peer = HostilePeer.connect(
        a.host, a.port, timeoutMs: 10_000, name: "hoarder-\(Int.random(in: 0..<1_000_000))")
    let body = String(repeating: "x", count: size)
    var acked = Set<[UInt8]>()
    var refused = Set<[UInt8]>()
    var reasons = Set<String>()
    var closed = false
    /// Reads what has arrived; waits up to `waitMs` for the first of it.
    func drain(waitMs: Int32) {
        guard !closed else { return }
        let (records, ended) = peer.available(waitMs: waitMs)
        if ended { closed = true }
        for r in records {
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
    var encoder = RecordStreamEncoder()
    let start = Date()
    for k in 0..<n {
        encoder.append(
            .chat(
                ChatRecord(
                    id: MessageID.random(), sequence: UInt64(k + 1),
                    createdAt: UInt64(Date().timeIntervalSince1970 * 1000), body: body)))
        if k % 16 == 15 || k == n - 1 {
            if !peer.sendChunks(of: &encoder) { closed = true }
            drain(waitMs: 0)
        }
        if closed || Date().timeIntervalSince(start) > 120 { break }
    }
    while !closed, acked.count + refused.count < n, Date().timeIntervalSince(start) < 120 { drain(waitMs: 1000) }
    emit(
        "acked \(acked.count) refused \(refused.count) reasons \(reasons.sorted().joined(separator: ","))"
            + (closed ? " closed" : ""))
}

/// `ping-flood T SECS`: a new peer with a 4 KiB receive buffer that never reads sends
/// frames of ~5,000 pings for SECS seconds.
func runPingFlood(_ a: ModeArguments) {
    let seconds = Double(a.n == 0 ? 10 : a.n)
    var peer = HostilePeer.connect(
        a.host, a.port, timeoutMs: 1000, name: "pinger-\(Int.random(in: 0..<1_000_000))", receiveBuffer: 4096)
    let fd = peer.conn.fd
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
            guard let sealed = try? peer.established.transport.seal(chunk), let frame = try? Frame.encode(sealed)
            else {
                fail("seal")
            }
            // The victim may stop reading (that is the point): a send that times out is
            // retried until the deadline, never abandoned half-way (that would break framing).
            var off = 0
            while off < frame.count {
                let r = frame[off...].withUnsafeBytes {
                    Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
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
        let r = b.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK)) }
        closed = r == 0 || (r < 0 && errno == ECONNRESET)
    }
    emit(String(format: "sent %.1f MiB", Double(sent) / 1_048_576) + (closed ? " closed" : " open"))
}

/// `room-flood T ROOMS OPS`: signed creates of ROOMS rooms naming the target, then OPS
/// add/remove changes in the first; "alive" if the target still answers a ping.
func runRoomFlood(_ a: ModeArguments) {
    let rooms = a.n
    let changes = a.int(3, default: 0)
    guard rooms >= 1, rooms <= 10_000, changes >= 0, changes <= 10_000 else { fail("ROOMS 1...10000, OPS 0...10000") }
    // The victim answers only after storing every operation of a read (two fsyncs each, up
    // to ~1,400 of them): on a loaded 2-core machine that is well over 10 s of silence, which
    // is the daemon working, not the daemon gone. The test's own limit bounds the wait.
    var peer = HostilePeer.connect(
        a.host, a.port, timeoutMs: 90_000, name: "roomflood-\(Int.random(in: 0..<1_000_000))")
    let id = peer.identity
    let victim = peer.target
    let now = UInt64(Date().timeIntervalSince1970)
    var encoder = RecordStreamEncoder()
    func flushOrReportClosed() {
        guard peer.sendChunks(of: &encoder) else {
            emit("closed")
            exit(0)
        }
    }
    var first: RoomOperation?
    for i in 0..<rooms {
        // Force-try: a create with a fresh id, a short name and two members is always valid.
        let op = try! RoomOperation.create(name: "flood\(i)", members: [victim], by: id, createdAt: now)
        if first == nil { first = op }
        encoder.append(.roomOperation(op))
        if i % 64 == 63 { flushOrReportClosed() }
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
        if i % 64 == 63 { flushOrReportClosed() }
    }
    encoder.append(.ping(99))
    flushOrReportClosed()
    // Alive if the pong comes back (acks for the operations may come first).
    emit(peer.read(until: { $0 == .pong(99) }) ? "alive" : "closed")
}
