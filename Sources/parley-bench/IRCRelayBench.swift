import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The reference for rows 3, 4 and 6: the same path through an IRC relay, ngircd from
/// Debian on loopback, with two scripted clients, configured for its best: penalties off
/// (`MaxPenaltyTime = 0`, ngircd.conf(5): "0 to disable penalties altogether"; with the
/// default -1 every command costs the sender penalty time and the relay throttles itself
/// to a third of its rate), and the sender an operator with user mode +F ("relaxed flood
/// protection"), which lifts the per-client flood limit too. MaxConnectionsIP = 0
/// removes the per-address connection limit. Clients use TCP_NODELAY (Socket.tcp).
final class IRCRelay: @unchecked Sendable {
    let server: ChildProcess
    let port: Int
    static let operName = "bench"
    /// A throwaway password: the server listens on 127.0.0.1 only and lives for one run.
    static let operPassword = "bench-oper"

    init(workDir: String) throws(BenchError) {
        guard let ngircd = findExecutable("ngircd") else {
            throw .unavailable("ngircd not installed (scripts/install-deps.sh bench)")
        }
        port = try freeLoopbackPort()
        let conf = workDir + "/ngircd.conf"
        let text = """
            [Global]
            \tName = bench.parley.invalid
            \tInfo = parley-bench reference relay
            \tListen = 127.0.0.1
            \tPorts = \(port)
            \tMotdPhrase = parley-bench
            \tServerUID = \(getuid())
            \tServerGID = \(getgid())
            \tPidFile = \(workDir)/ngircd.pid
            [Limits]
            \tMaxPenaltyTime = 0
            \tMaxConnectionsIP = 0
            \tMaxConnections = 0
            \tPingTimeout = 600
            \tPongTimeout = 600
            [Options]
            \tDNS = no
            \tIdent = no
            \tPAM = no
            \tOperCanUseMode = yes
            [Operator]
            \tName = \(Self.operName)
            \tPassword = \(Self.operPassword)

            """
        do { try text.write(toFile: conf, atomically: true, encoding: .utf8) } catch { throw .io("\(conf): \(error)") }
        server = try ChildProcess(
            label: "ngircd", executable: ngircd, arguments: ["-n", "-f", conf],
            logPath: workDir + "/ngircd.log")
        let ready = Deadline(seconds: 10)
        while (try? Socket.tcp(port: port, deadline: ready)) == nil {
            guard !ready.passed, server.isRunning else {
                server.stop()
                throw .process("ngircd did not start: \(server.logTail())")
            }
            Clock.sleep(milliseconds: 20)
        }
    }

    func stop() { server.stop() }

    /// A registered client; with `relaxedFlood` it is an operator with user mode +F.
    func client(nick: String, relaxedFlood: Bool) throws(BenchError) -> IRCClient {
        let c = try IRCClient(port: port, nick: nick)
        if relaxedFlood {
            try c.send("OPER \(Self.operName) \(Self.operPassword)\r\nMODE \(nick) +F\r\n")
            let deadline = Deadline(seconds: 10)
            while true {
                let l = try c.nextLine(deadline: deadline)
                if l.contains(" MODE \(nick) :+F") || l.hasSuffix("MODE \(nick) :+F") || l.contains("MODE \(nick) +F") {
                    break
                }
                if l.contains(" 491 ") || l.contains(" 464 ") || l.contains(" 481 ") || l.contains(" 501 ") {
                    throw .protocolError("ngircd refused OPER/MODE +F: \(l)")
                }
            }
        }
        return c
    }
}

/// A line-oriented IRC client on a blocking socket.
final class IRCClient: @unchecked Sendable {
    let socket: Socket
    let nick: String
    private var buffer: [UInt8] = []
    private var readIndex = 0

    init(port: Int, nick: String) throws(BenchError) {
        self.nick = nick
        socket = try Socket.tcp(port: port, deadline: Deadline(seconds: 5))
        try send("NICK \(nick)\r\nUSER \(nick) 0 * :\(nick)\r\n")
        let deadline = Deadline(seconds: 10)
        while true {
            let l = try nextLine(deadline: deadline)
            if l.contains(" 376 ") || l.contains(" 422 ") { break }  // end of (or no) MOTD
            if l.hasPrefix("PING") { try send("PONG" + l.dropFirst(4) + "\r\n") }
        }
    }

    func send(_ text: String) throws(BenchError) {
        try socket.sendAll(Array(text.utf8), deadline: Deadline(seconds: 10))
    }

    func sendBytes(_ bytes: [UInt8], deadline: Deadline) throws(BenchError) {
        try socket.sendAll(bytes, deadline: deadline)
    }

    func nextLine(deadline: Deadline) throws(BenchError) -> String {
        String(decoding: try nextRawLine(deadline: deadline), as: UTF8.self)
    }

    func nextRawLine(deadline: Deadline) throws(BenchError) -> [UInt8] {
        while true {
            if let l = popLine() { return l }
            let n = try socket.receive(into: &buffer, deadline: deadline)
            if n == 0 { throw .io("ngircd closed the connection") }
        }
    }

    func popLine() -> [UInt8]? {
        guard let nl = buffer[readIndex...].firstIndex(of: 0x0a) else {
            if readIndex == buffer.count || readIndex > 1 << 20 {
                buffer.removeFirst(readIndex)
                readIndex = 0
            }
            return nil
        }
        var end = nl
        if end > readIndex && buffer[end - 1] == 0x0d { end -= 1 }
        let line = Array(buffer[readIndex..<end])
        readIndex = nl + 1
        return line
    }

    func fill(waitMilliseconds ms: Int32) throws(BenchError) -> Bool {
        guard socket.readable(withinMilliseconds: ms) else { return false }
        if try socket.receive(into: &buffer, deadline: Deadline(seconds: 1)) == 0 {
            throw .io("ngircd closed the connection")
        }
        return true
    }

    func close() { socket.close() }
}

/// The IRC side of rows 3, 4 and 6.
struct IRCRelayBench {
    let scale: BenchScale
    let relay: IRCRelay

    /// Row 3 reference: one PRIVMSG in flight, written by alice → read by bob.
    func latency(count: Int) throws -> Samples {
        let alice = try relay.client(nick: "alice", relaxedFlood: true)
        let bob = try relay.client(nick: "bob", relaxedFlood: false)
        defer {
            alice.close()
            bob.close()
        }
        let marker = Array(":lat-".utf8)
        var s = Samples()
        let deadline = Deadline(seconds: scale.rowSeconds)
        let warmUp = 5
        var i = 0
        while i < count + warmUp && !deadline.passed {
            let line = Array("PRIVMSG bob :\(ParleyChatBench.body("lat-", i, size: 64))\r\n".utf8)
            let t0 = Clock.nowNs()
            try alice.sendBytes(line, deadline: deadline)
            while true {
                let l = try bob.nextRawLine(deadline: deadline)
                if ByteScan.number(after: marker, in: l) == i { break }
                if l.starts(with: Array("PING".utf8)) {
                    try bob.send("PONG" + String(decoding: l.dropFirst(4), as: UTF8.self) + "\r\n")
                }
            }
            if i >= warmUp { s.add(Clock.nowNs() - t0) }
            i += 1
        }
        return s
    }

    /// Row 4 reference: `count` PRIVMSGs of 64-byte texts pipelined; the sender stays at most
    /// `window` messages ahead of what bob has read (the same bound Parley's client keeps).
    /// Each window gets its own nicknames: the previous run's may not have left the server yet.
    func throughput(count: Int, window: Int) throws -> (rate: Double, received: Int, latency: Samples) {
        let alice = try relay.client(nick: "tpa\(window)", relaxedFlood: true)
        let bob = try relay.client(nick: "tpb\(window)", relaxedFlood: false)
        defer {
            alice.close()
            bob.close()
        }
        let deadline = Deadline(seconds: scale.rowSeconds)
        let marker = Array(":tp-".utf8)
        let got = SharedCounter()
        let log = ArrivalLog(count: count)
        let reader = JoinableThread {
            while log.count < count && !deadline.passed {
                guard let l = bob.popLine() else {
                    if (try? bob.fill(waitMilliseconds: 50)) == nil { return }
                    continue
                }
                if let idx = ByteScan.number(after: marker, in: l) {
                    log.mark(idx, at: Clock.nowNs())
                    got.add(1)
                }
            }
        }
        var sentNs = [UInt64](repeating: 0, count: count)
        var sent = 0
        let batchLimit = 64
        let start = Clock.nowNs()
        while sent < count && !deadline.passed {
            let room = min(window - (sent - got.get()), count - sent, batchLimit)
            guard room > 0 else {
                usleep(50)
                continue
            }
            var batch: [UInt8] = []
            for k in 0..<room {
                batch += Array("PRIVMSG \(bob.nick) :\(ParleyChatBench.body("tp-", sent + k, size: 64))\r\n".utf8)
            }
            let t = Clock.nowNs()
            try alice.sendBytes(batch, deadline: deadline)
            for k in 0..<room { sentNs[sent + k] = t }
            sent += room
        }
        reader.join(seconds: Double(deadline.millisecondsLeft) / 1000 + 2)
        let elapsed = Double((log.last ?? start) - start) / 1e9
        var lat = Samples()
        for i in 0..<count where log.times[i] != 0 { lat.add(log.times[i] - sentNs[i]) }
        return (elapsed > 0 ? Double(log.count) / elapsed : 0, log.count, lat)
    }

    /// Row 6 reference: PING → PONG round trips, the IRC server's trivial request.
    func pingRoundTrip(count: Int) throws -> Samples {
        let c = try relay.client(nick: "pinger", relaxedFlood: true)
        defer { c.close() }
        var s = Samples()
        let deadline = Deadline(seconds: scale.rowSeconds)
        var i = 0
        while i < count + 20 && !deadline.passed {
            let token = "t\(i)"
            let t0 = Clock.nowNs()
            try c.send("PING :\(token)\r\n")
            while true {
                let l = try c.nextLine(deadline: deadline)
                if l.contains("PONG") && l.hasSuffix(token) { break }
            }
            if i >= 20 { s.add(Clock.nowNs() - t0) }
            i += 1
        }
        return s
    }
}
