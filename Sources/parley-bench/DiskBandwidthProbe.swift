import Foundation
import ParleyCore
import ParleyStore

/// What durable 64 KiB messages can get from the disk the daemons' state lives on: the
/// bare disk (append 64 KiB, fdatasync, repeatedly) and Parley's store alone (row 1i).
/// Row 5 is judged against the AEAD rate as the issue asks; row 5b says how much of the
/// gap is the disk, which no code change can remove.
struct DiskBandwidthProbe {
    /// Size of one write: one bulk message's body.
    static let chunkBytes = 65_536
    /// Times each bulk body reaches the disk in row 5: SQLite appends it to the WAL and
    /// later checkpoints it into the database file, on the sender and on the receiver
    /// (both on this one disk in the benchmark).
    static let writesPerBulkBody = 4
    /// Bulk bodies per transaction in the store measurement: row 5's window.
    static let storeBatch = 16

    let smoke: Bool
    let workDir: String

    /// MB/s of Parley's store queuing 64 KiB bodies, `storeBatch` per transaction
    /// (SQLite WAL, synchronous=FULL; checkpoints included as they fall).
    func storeRate() throws -> Double {
        let transactions = smoke ? 2 : 25
        let dir = workDir + "/bulk-store"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let store = try Store(directory: dir, durability: .full)
        defer { try? store.close() }
        let me = try IdentityPublicKey(bytes: [UInt8](repeating: 0xaa, count: IdentityPublicKey.length))
        let peer = try IdentityPublicKey(bytes: [UInt8](repeating: 0xbb, count: IdentityPublicKey.length))
        let body = String(repeating: "x", count: Self.chunkBytes)
        let t0 = Clock.nowNs()
        for _ in 0..<transactions {
            let batch = (0..<Self.storeBatch).map { _ in
                NewOutgoingMessage(id: MessageID.random(), recipient: peer, body: body, createdAt: 0)
            }
            _ = try store.enqueue(batch, sender: me)
        }
        let seconds = Double(Clock.nowNs() - t0) / 1e9
        return seconds > 0 ? Double(transactions * Self.storeBatch * Self.chunkBytes) / seconds / 1e6 : 0
    }

    /// MB/s of 64 KiB write + fdatasync.
    func diskRate() throws -> Double {
        let n = smoke ? 10 : 200
        let samples = try FsyncProbe.measure(directory: workDir, count: n, bytes: Self.chunkBytes)
        let seconds = samples.mean * Double(samples.count) / 1e9
        return seconds > 0 ? Double(n * Self.chunkBytes) / seconds / 1e6 : 0
    }
}
