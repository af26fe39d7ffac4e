import Foundation

/// Rows 3–6, Parley's side: a message from client A's control socket through daemon A
/// and daemon B to a client subscribed on B, and a trivial control call.
struct ParleyChatBench {
    let scale: BenchScale
    let a: Parleyd
    let b: Parleyd

    private static let received = Array("\"method\":\"message.received\"".utf8)
    private static let delivered = Array("\"method\":\"message.delivered\"".utf8)
    private static let errorKey = Array("\"error\"".utf8)

    /// A message body of exactly `size` ASCII bytes starting with `prefix` and the index.
    static func body(_ prefix: String, _ i: Int, size: Int) -> String {
        var s = prefix + String(format: "%08d-", i)
        if s.utf8.count < size { s += String(repeating: "x", count: size - s.utf8.count) }
        return s
    }

    static func sendParams(to: String, body: String) -> String {
        "{\"to\":\"\(to)\",\"body\":\"\(body)\"}"
    }

    struct Latency {
        var samples = Samples()
        /// Daemon CPU (user + system) per message, in µs.
        var cpuA = 0.0
        var cpuB = 0.0
    }

    /// Row 3: one message in flight; send written → message.received read on B.
    func latency(count: Int) throws -> Latency {
        let sender = try ControlLine(path: a.socketPath)
        let sub = try ControlLine(path: b.socketPath)
        defer {
            sender.close()
            sub.close()
        }
        _ = try sub.call("messages.subscribe")
        let marker = Array("\"body\":\"lat-".utf8)
        var samples = Samples()
        let deadline = Deadline(seconds: scale.rowSeconds)
        let warmUp = 5
        var i = 0
        var cpuA0 = 0
        var cpuB0 = 0
        while i < count + warmUp && !deadline.passed {
            if i == warmUp {
                cpuA0 = a.child.cpuTicks() ?? 0
                cpuB0 = b.child.cpuTicks() ?? 0
            }
            let line = sender.requestLine(
                method: "messages.send",
                params: Self.sendParams(to: b.name, body: Self.body("lat-", i, size: 64)))
            let t0 = Clock.nowNs()
            try sender.write(line, deadline: deadline)
            while true {
                let l = try sub.nextLine(deadline: deadline)
                if ByteScan.contains(Self.received, in: l), ByteScan.number(after: marker, in: l) == i { break }
            }
            let t1 = Clock.nowNs()
            let resp = try sender.nextLine(deadline: deadline)
            if ByteScan.contains(Self.errorKey, in: resp) {
                throw BenchError.protocolError("messages.send failed: \(String(decoding: resp, as: UTF8.self))")
            }
            if i >= warmUp { samples.add(t1 - t0) }
            i += 1
        }
        var result = Latency(samples: samples)
        let n = Double(max(samples.count, 1))
        result.cpuA = Double((a.child.cpuTicks() ?? 0) - cpuA0) / ChildProcess.ticksPerSecond / n * 1e6
        result.cpuB = Double((b.child.cpuTicks() ?? 0) - cpuB0) / ChildProcess.ticksPerSecond / n * 1e6
        return result
    }

    struct Pipelined {
        var sent = 0
        var answered = 0
        var received = 0
        var delivered = 0
        var elapsedDeliveredNs: UInt64 = 0
        var elapsedReceivedNs: UInt64 = 0
        var latency = Samples()
        /// CPU (user + system) each daemon spent during the run, in seconds.
        var cpuA = 0.0
        var cpuB = 0.0
        /// Bytes each daemon sent to the disk during the run (/proc/PID/io).
        var diskA = 0
        var diskB = 0
        var completed: Bool { delivered == sent && received == sent && sent > 0 }
    }

    /// Rows 4 and 5: `count` messages of `size` bytes, at most `window` sends awaiting their
    /// answer. Ends when A has seen every message.delivered (B stored it and acknowledged).
    func pipelined(count: Int, size: Int, window: Int, prefix: String) throws -> Pipelined {
        let sender = try ControlLine(path: a.socketPath)
        let sub = try ControlLine(path: b.socketPath)
        let acks = try ControlLine(path: a.socketPath)
        defer {
            sender.close()
            sub.close()
            acks.close()
        }
        _ = try sub.call("messages.subscribe")
        _ = try acks.call("messages.subscribe")
        let deadline = Deadline(seconds: scale.rowSeconds)
        let marker = Array("\"body\":\"\(prefix)".utf8)
        let recvLog = ArrivalLog(count: count)
        let ackLog = ArrivalLog(count: count)

        let receiver = JoinableThread {
            while recvLog.count < count && !deadline.passed {
                guard let l = sub.popLine() else {
                    if (try? sub.fill(waitMilliseconds: 50)) == nil { return }
                    continue
                }
                if ByteScan.contains(Self.received, in: l), let idx = ByteScan.number(after: marker, in: l) {
                    recvLog.mark(idx, at: Clock.nowNs())
                }
            }
        }
        let acker = JoinableThread {
            while ackLog.count < count && !deadline.passed {
                guard let l = acks.popLine() else {
                    if (try? acks.fill(waitMilliseconds: 50)) == nil { return }
                    continue
                }
                if ByteScan.contains(Self.delivered, in: l) { ackLog.markNext(at: Clock.nowNs()) }
            }
        }

        var sentNs = [UInt64](repeating: 0, count: count)
        var sent = 0
        var answered = 0
        var errors = 0
        var firstError = ""
        /// Sends written per syscall: a client that pipelines writes in batches.
        let batchLimit = 64
        let cpuA0 = a.child.cpuTicks() ?? 0
        let cpuB0 = b.child.cpuTicks() ?? 0
        let diskA0 = a.child.diskWriteBytes() ?? 0
        let diskB0 = b.child.diskWriteBytes() ?? 0
        let start = Clock.nowNs()
        while answered < count && !deadline.passed {
            let room = min(window - (sent - answered), count - sent, batchLimit)
            if room > 0 {
                var batch: [UInt8] = []
                for k in 0..<room {
                    batch += sender.requestLine(
                        method: "messages.send",
                        params: Self.sendParams(to: b.name, body: Self.body(prefix, sent + k, size: size)))
                }
                let t = Clock.nowNs()
                try sender.write(batch, deadline: deadline)
                for k in 0..<room { sentNs[sent + k] = t }
                sent += room
            }
            while let l = sender.popLine() {
                answered += 1
                if ByteScan.contains(Self.errorKey, in: l) {
                    errors += 1
                    if firstError.isEmpty { firstError = String(decoding: l.prefix(300), as: UTF8.self) }
                }
            }
            if sent - answered >= window || sent == count {
                _ = try sender.fill(waitMilliseconds: 20)
            }
        }
        receiver.join(seconds: max(0, Double(deadline.millisecondsLeft) / 1000) + 2)
        acker.join(seconds: max(0, Double(deadline.millisecondsLeft) / 1000) + 2)
        if errors > 0 { throw BenchError.protocolError("\(errors) sends failed, first: \(firstError)") }

        var r = Pipelined()
        r.cpuA = Double((a.child.cpuTicks() ?? 0) - cpuA0) / ChildProcess.ticksPerSecond
        r.cpuB = Double((b.child.cpuTicks() ?? 0) - cpuB0) / ChildProcess.ticksPerSecond
        r.diskA = (a.child.diskWriteBytes() ?? 0) - diskA0
        r.diskB = (b.child.diskWriteBytes() ?? 0) - diskB0
        r.sent = sent
        r.answered = answered
        r.received = recvLog.count
        r.delivered = ackLog.count
        r.elapsedDeliveredNs = (ackLog.last ?? start) - start
        r.elapsedReceivedNs = (recvLog.last ?? start) - start
        for i in 0..<count where recvLog.times[i] != 0 && sentNs[i] != 0 {
            r.latency.add(recvLog.times[i] - sentNs[i])
        }
        return r
    }

    /// Row 6: sequential round trips of a parameterless method on one connection.
    func controlRoundTrip(method: String, count: Int) throws -> Samples {
        let c = try ControlLine(path: a.socketPath)
        defer { c.close() }
        var s = Samples()
        let deadline = Deadline(seconds: scale.rowSeconds)
        let warmUp = 20
        var i = 0
        while i < count + warmUp && !deadline.passed {
            let line = c.requestLine(method: method, params: nil)
            let t0 = Clock.nowNs()
            try c.write(line, deadline: deadline)
            let resp = try c.nextLine(deadline: deadline)
            let t1 = Clock.nowNs()
            if ByteScan.contains(Self.errorKey, in: resp) { throw BenchError.protocolError("\(method) failed") }
            if i >= warmUp { s.add(t1 - t0) }
            i += 1
        }
        return s
    }
}

/// Arrival times by message index, written by one thread and read after it was joined.
final class ArrivalLog: @unchecked Sendable {
    private(set) var times: [UInt64]
    private(set) var count = 0
    private(set) var last: UInt64?
    private var nextIndex = 0

    init(count: Int) { times = [UInt64](repeating: 0, count: count) }

    func mark(_ i: Int, at t: UInt64) {
        guard i >= 0, i < times.count, times[i] == 0 else { return }
        times[i] = t
        count += 1
        last = t
    }

    /// For events that carry no index (deliveries): counted in arrival order.
    func markNext(at t: UInt64) {
        mark(nextIndex, at: t)
        nextIndex += 1
    }
}
