import Foundation
import ParleyCore
import ParleyStore

/// Row 1, the disk's part of the floor: what one durable commit costs on the filesystem
/// the daemons' state lives on. Parley's store (SQLite WAL, synchronous=FULL) queuing one
/// message per transaction, and 64 per transaction, beside a bare write + fdatasync.
struct DurableCommitBench {
    let scale: BenchScale
    let workDir: String
    /// Messages per transaction in the batched measurement: what one control-socket read
    /// of pipelined sends could commit together.
    static let batch = 64

    func run() throws -> [BenchRow] {
        let n = scale.smoke ? 20 : 300
        let dir = workDir + "/commit-store"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try Store(directory: dir, durability: .full)
        defer { try? store.close() }
        let me = try IdentityPublicKey(bytes: [UInt8](repeating: 0xaa, count: IdentityPublicKey.length))
        let peer = try IdentityPublicKey(bytes: [UInt8](repeating: 0xbb, count: IdentityPublicKey.length))
        let body = String(repeating: "x", count: 64)
        func message() -> NewOutgoingMessage {
            NewOutgoingMessage(id: MessageID.random(), recipient: peer, body: body, createdAt: 0)
        }
        var single = Samples()
        for _ in 0..<n {
            let t0 = Clock.nowNs()
            _ = try store.enqueue([message()], sender: me)
            single.add(Clock.nowNs() - t0)
        }
        var batched = Samples()
        for _ in 0..<max(n / 10, 5) {
            let msgs = (0..<Self.batch).map { _ in message() }
            let t0 = Clock.nowNs()
            _ = try store.enqueue(msgs, sender: me)
            batched.add((Clock.nowNs() - t0) / UInt64(Self.batch))
        }
        // The bare disk: append 64 bytes, fdatasync.
        let disk = try FsyncProbe.measure(directory: workDir, count: n)
        return [
            BenchRow(
                id: "1g", measure: "Durable commit, 1 message per transaction", unit: "µs",
                parley: single.median / 1000, reference: disk.median / 1000,
                referenceName: "write 64 B + fdatasync, same filesystem", goal: .none,
                note:
                    "Store.enqueue, SQLite WAL synchronous=FULL; p99 \(fmt(single.p99 / 1000)) µs vs \(fmt(disk.p99 / 1000)) µs"
            ),
            BenchRow(
                id: "1h", measure: "Durable commit, \(Self.batch) messages per transaction, per message", unit: "µs",
                parley: batched.median / 1000, reference: disk.median / 1000 / Double(Self.batch),
                referenceName: "fdatasync / \(Self.batch)", goal: .none,
                note: "what group commit of pipelined sends would cost")
        ]
    }
}
