// `offer-flood T COUNT`: a hostile file sender that makes the target refuse offers as fast
// as its session carries them (docs/PROTOCOL.md "Files", refusals): each refusal is
// answered, but only a bounded number per minute may become stored rows.
import Foundation
import ParleyCore

/// As a new (pinned) peer announcing files: COUNT offers of 2^63 bytes (over every limit,
/// so refused at once), streamed 16 to a frame while the answers are read; then one chat.
/// Prints "ended E" (the `fileEnd` answers, within 60 s), then "chat acked" or "chat lost".
func runOfferFlood(_ a: ModeArguments) {
    let n = a.n
    guard n >= 1, n <= 100_000 else { fail("COUNT 1...100000") }
    var peer = HostilePeer.connect(
        a.host, a.port, timeoutMs: 10_000, name: "offerer-\(Int.random(in: 0..<1_000_000))",
        features: .supported)
    let chunkSize: UInt32 = 65_536
    let hash = FileHash.of([0])
    var ended = Set<[UInt8]>()
    var acked = Set<[UInt8]>()
    var closed = false
    /// Reads what has arrived; waits up to `waitMs` for the first of it.
    func drain(waitMs: Int32) {
        guard !closed else { return }
        let (records, gone) = peer.available(waitMs: waitMs)
        if gone { closed = true }
        for r in records {
            switch r {
            case .ping(let v): _ = peer.send([.pong(v)])
            case let .file(.end(transfer, _, _)): ended.insert(transfer.bytes)
            case .ack(let ids): for i in ids { acked.insert(i.bytes) }
            case .close: closed = true
            default: break
            }
        }
    }
    var encoder = RecordStreamEncoder()
    let start = Date()
    for k in 0..<n {
        let offer = FileOffer(
            transfer: TransferID.random(), size: 1 << 63, chunkSize: chunkSize, contentHash: hash,
            listHash: hash, name: "flood-\(k).bin", mediaType: "application/octet-stream")
        encoder.append(.file(.offer(offer)))
        if k % 16 == 15 || k == n - 1 {
            if !peer.sendChunks(of: &encoder) { closed = true }
            drain(waitMs: 0)
        }
        if closed || Date().timeIntervalSince(start) > 60 { break }
    }
    while !closed, ended.count < n, Date().timeIntervalSince(start) < 60 { drain(waitMs: 1000) }
    emit("ended \(ended.count)" + (closed ? " closed" : ""))
    guard !closed else { exit(0) }
    let chat = MessageID.random()
    _ = peer.send([
        .chat(
            ChatRecord(
                id: chat, sequence: 1, createdAt: UInt64(Date().timeIntervalSince1970 * 1000),
                body: "still here after the flood"))
    ])
    let chatStart = Date()
    while !closed, !acked.contains(chat.bytes), Date().timeIntervalSince(chatStart) < 20 { drain(waitMs: 1000) }
    emit(acked.contains(chat.bytes) ? "chat acked" : "chat lost")
}
