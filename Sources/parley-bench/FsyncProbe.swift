import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The disk's part of every durable floor: append a small record to a file on the
/// filesystem the daemons' state lives on and `fdatasync` it, the least any design that
/// promises "stored before acknowledged" must wait for once per commit.
enum FsyncProbe {
    /// What one durable chat record costs to append: a 64-byte body.
    static let recordBytes = 64

    /// `count` appends of `bytes` bytes, each followed by `fdatasync`: one sample each.
    static func measure(directory: String, count: Int, bytes: Int = recordBytes) throws(BenchError) -> Samples {
        let path = directory + "/fsync-probe-\(getpid())"
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw BenchError.io("open \(path): \(Socket.errorText())") }
        defer {
            close(fd)
            unlink(path)
        }
        let chunk = [UInt8](repeating: 0x78, count: bytes)
        var disk = Samples()
        for _ in 0..<count {
            let t0 = Clock.nowNs()
            guard write(fd, chunk, chunk.count) == chunk.count, fdatasync(fd) == 0 else {
                throw BenchError.io("write/fdatasync: \(Socket.errorText())")
            }
            disk.add(Clock.nowNs() - t0)
        }
        return disk
    }
}
