import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The durable reference for row 4 (issue 32): Debian's `redis-server` as a log that stores
/// every message and group-commits, `appendonly yes` with `appendfsync always` (each reply
/// is sent only after the append-only file is fsynced; the writes of one event-loop turn
/// share that fsync), on loopback, fed pipelined `XADD`s of the same 64-byte texts at the
/// same windows as Parley's client. It stores like Parley; it does not encrypt, relay to a
/// second process or index. ngircd stays the non-durable reference.
final class RedisLog: @unchecked Sendable {
    let server: ChildProcess
    let port: Int

    init(workDir: String) throws(BenchError) {
        guard let redis = findExecutable("redis-server") else {
            throw .unavailable("redis-server not installed (scripts/install-deps.sh bench)")
        }
        port = try freeLoopbackPort()
        let dir = workDir + "/redis"
        try? FileManager.default.removeItem(atPath: dir)
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw .io("\(dir): \(error)")
        }
        // Protected mode off: it admits only 127.0.0.1 and ::1 as clients, and the bench's
        // sockets come from other 127/8 source addresses (`Socket.tcp`). The server listens
        // on 127.0.0.1 only and lives for one run.
        server = try ChildProcess(
            label: "redis-server", executable: redis,
            arguments: [
                "--port", "\(port)", "--bind", "127.0.0.1", "--protected-mode", "no", "--dir", dir,
                "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no",
                "--logfile", ""
            ],
            logPath: workDir + "/redis.log")
        let ready = Deadline(seconds: 10)
        while (try? Socket.tcp(port: port, deadline: ready)) == nil {
            guard !ready.passed, server.isRunning else {
                server.stop()
                throw .process("redis-server did not start: \(server.logTail())")
            }
            Clock.sleep(milliseconds: 20)
        }
    }

    func stop() { server.stop() }

    /// `count` XADDs of 64-byte texts pipelined, at most `window` awaiting their reply;
    /// the rate counts replies (each one durable when it arrives).
    func throughput(count: Int, window: Int, seconds: Double) throws(BenchError) -> (rate: Double, stored: Int) {
        let socket = try Socket.tcp(port: port, deadline: Deadline(seconds: 5))
        defer { socket.close() }
        let deadline = Deadline(seconds: seconds)
        let stream = "chat\(window)"
        let batchLimit = 64
        var sent = 0
        var replies = 0
        var buffer: [UInt8] = []
        var scanned = 0
        let start = Clock.nowNs()
        while replies < count && !deadline.passed {
            let room = min(window - (sent - replies), count - sent, batchLimit)
            if room > 0 {
                var batch: [UInt8] = []
                for k in 0..<room {
                    let body = ParleyChatBench.body("r-", sent + k, size: 64)
                    batch += Array(
                        "*5\r\n$4\r\nXADD\r\n$\(stream.utf8.count)\r\n\(stream)\r\n$1\r\n*\r\n$4\r\nbody\r\n$\(body.utf8.count)\r\n\(body)\r\n"
                            .utf8)
                }
                try socket.sendAll(batch, deadline: deadline)
                sent += room
            }
            guard room <= 0 || socket.readable(withinMilliseconds: 0) else { continue }
            guard try socket.receive(into: &buffer, deadline: deadline) > 0 else {
                throw .io("redis-server closed the connection")
            }
            // Each reply is a bulk string, "$<n>\r\n<id>\r\n"; an error is "-...".
            while let nl = buffer[scanned...].firstIndex(of: 0x0a) {
                let first = buffer[scanned]
                if first == UInt8(ascii: "-") {
                    throw .protocolError("redis: \(String(decoding: buffer[scanned..<nl], as: UTF8.self))")
                }
                if first == UInt8(ascii: "$") { replies += 1 }
                scanned = nl + 1
            }
            if scanned > 1 << 16 {
                buffer.removeFirst(scanned)
                scanned = 0
            }
        }
        let elapsed = Double(Clock.nowNs() - start) / 1e9
        return (elapsed > 0 ? Double(replies) / elapsed : 0, replies)
    }
}
