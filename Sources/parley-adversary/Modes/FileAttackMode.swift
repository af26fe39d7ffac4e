// `file T ATTACK`: a hostile (or, with `honest`, a correct) file sender (docs/PROTOCOL.md,
// "Files"): names that attack the file system, a size no disk has, and chunks or hashes
// that lie.
import Foundation
import ParleyCore

func runFileAttack(_ a: ModeArguments) {
    guard let attack = a.string(2) else { fail("ATTACK") }
    var peer = HostilePeer.connect(a.host, a.port, timeoutMs: 60_000, name: "mallory", features: .supported)
    let chunkSize = 4_096
    var content = Sodium.randomBytes(chunkSize * 2 + 1_000)
    let chunks = stride(from: 0, to: content.count, by: chunkSize).map {
        Array(content[$0..<min($0 + chunkSize, content.count)])
    }
    let hashes = chunks.map { FileHash.of($0) }
    // The file's hash is the hash of the chunk list (docs/PROTOCOL.md "Files"). `lying-hash`
    // offers another one (its list then fails the check); `old-format` offers BLAKE2b of
    // the whole file in `contentHash`, as an older Parley did.
    var listHash = FileHash.listHash(hashes)
    if attack == "lying-hash" { listHash[0] ^= 1 }
    let contentHash = attack == "old-format" ? FileHash.of(content) : listHash
    let names = [
        "traversal": "../../etc/passwd", "control": "\u{1B}[31mred\nline\u{202E}txt.exe/CON.txt"
    ]
    let transfer = TransferID.random()
    let offer = FileOffer(
        transfer: transfer, size: attack == "huge" ? 1 << 63 : UInt64(content.count), chunkSize: UInt32(chunkSize),
        contentHash: contentHash, listHash: listHash, name: names[attack] ?? "honest.bin",
        mediaType: attack == "garbage-thumbnail" ? "image/jpeg" : "application/octet-stream",
        thumbnail: attack == "garbage-thumbnail" ? garbageThumbnail() : [])
    content.removeAll()
    peer.sendOrReportClosed([.file(.offer(offer))])
    emit("offered \(transfer.hex)")
    var corruptSent = 0
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline {
        guard let f = peer.conn.recvFrame() else {
            emit("closed")
            exit(0)
        }
        guard let records = peer.open(f) else { fail("transport") }
        for r in records {
            switch r {
            case .ping(let v):
                peer.sendOrReportClosed([.pong(v)])
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
                peer.sendOrReportClosed(out)
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

/// The largest thumbnail an offer may carry, of random bytes that start like neither a JPEG
/// nor a PNG: a receiver must store it and never decode it or hand it on as a picture.
private func garbageThumbnail() -> [UInt8] {
    var bytes = Sodium.randomBytes(FileLimits.maxThumbnailBytes)
    bytes[0] = 0x00
    return bytes
}
