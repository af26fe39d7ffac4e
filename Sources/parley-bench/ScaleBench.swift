/// Row 7: one daemon with many peer sessions (1,000 in the full run, issue 21), each peer
/// an in-process client with its own identity and card speaking the real protocol. Memory
/// from VmRSS, CPU from utime + stime, wake-ups from the context switches of every thread,
/// all read from /proc for the daemon's pid.
struct ScaleBench {
    let scale: BenchScale
    let binary: String
    let workDir: String

    /// The goal for resident memory with 1,000 sessions.
    static let goalRSSMiB = 64.0
    /// "Idle CPU ≈ 0": at most this percentage of one core.
    static let goalIdleCPUPercent = 1.0
    /// Wake-ups per second of the idle daemon with 1,000 quiet sessions (laptops).
    static let goalWakeupsPerSecond = 2.0
    /// After the last session opened, before the idle window: the greetings of a new
    /// session (status, address records, listen ports) are over well within this.
    static let quietMilliseconds = 2_000
    /// How long the daemon settles before its baseline memory is read.
    static let settleMilliseconds = 500

    func run() -> [BenchRow] {
        let n = scale.scaleClients
        let title = "\(n) sessions"
        do {
            let daemon = try Parleyd(binary: binary, workDir: workDir, name: "scale")
            defer { daemon.stop() }
            Clock.sleep(milliseconds: Self.settleMilliseconds)
            let rss0 = daemon.child.rssKiB() ?? 0
            let base = idle(daemon: daemon, clients: [], seconds: scale.baselineIdleSeconds)

            var clients: [NoiseClient] = []
            defer { for c in clients { c.close() } }
            // Each session costs a key pair, a card and a handshake in this process.
            let deadline = Deadline(seconds: max(scale.rowSeconds, Double(n) / 10))
            for i in 0..<n {
                guard !deadline.passed else { throw BenchError.timedOut("only \(i) of \(n) sessions opened") }
                let me = try BenchIdentity(name: String(format: "scale-%04d", i))
                let c = try NoiseClient.connect(port: daemon.port, as: me, deadline: Deadline(seconds: 10))
                try c.pingPong(1, deadline: Deadline(seconds: 10))
                clients.append(c)
                // Opening 1,000 takes longer than a daemon's dead-after (15 s before issue
                // 21, with a ping after 5 s): keep the open ones answering meanwhile.
                if i % 50 == 49 { for c in clients { _ = try? c.answerPings() } }
            }
            let online = Deadline(seconds: 20)
            while daemon.peersOnline() < n && !online.passed {
                for c in clients { _ = try? c.answerPings() }
                Clock.sleep(milliseconds: 50)
            }
            let up = daemon.peersOnline()
            guard up >= n else { throw BenchError.protocolError("daemon reports \(up) of \(n) sessions online") }
            let quiet = Deadline(seconds: Double(Self.quietMilliseconds) / 1000)
            while !quiet.passed {
                for c in clients { _ = try? c.answerPings() }
                Clock.sleep(milliseconds: 100)
            }
            let busy = idle(daemon: daemon, clients: clients, seconds: scale.idleSeconds)
            let rss1 = daemon.child.rssKiB() ?? 0
            let totalMiB = Double(rss1) / 1024
            let perSessionKiB = Double(rss1 - rss0) / Double(n)
            return [
                BenchRow(
                    id: "7a", measure: "Daemon RSS with \(title)", unit: "MiB", parley: totalMiB,
                    reference: Double(rss0) / 1024, referenceName: "same daemon, 0 sessions",
                    goal: .valueAtMost(Self.goalRSSMiB), note: "VmRSS after the idle window"),
                BenchRow(
                    id: "7b", measure: "RSS per session", unit: "KiB", parley: perSessionKiB, reference: nil,
                    referenceName: "—", goal: .none, note: "(RSS with \(n) − RSS with 0) / \(n)"),
                BenchRow(
                    id: "7c", measure: "Idle CPU with \(title) over \(scale.idleSeconds) s", unit: "% core",
                    parley: busy.cpuPercent, reference: base.cpuPercent,
                    referenceName: "same daemon, 0 sessions, \(scale.baselineIdleSeconds) s",
                    goal: .valueAtMost(Self.goalIdleCPUPercent),
                    note: "peers answer the daemon's keepalive pings; tick = 1/\(Int(ChildProcess.ticksPerSecond)) s"),
                BenchRow(
                    id: "7d", measure: "Wake-ups/s of the idle daemon with \(title) over \(scale.idleSeconds) s",
                    unit: "/s", parley: busy.wakeupsPerSecond, reference: base.wakeupsPerSecond,
                    referenceName: "same daemon, 0 sessions, \(scale.baselineIdleSeconds) s",
                    goal: .valueAtMost(Self.goalWakeupsPerSecond),
                    note: "voluntary + involuntary context switches of every thread (/proc/PID/task/*/status)")
            ]
        } catch {
            let why = "\(error)"
            return [
                .skipped(
                    id: "7a", measure: "Daemon RSS with \(title)", unit: "MiB", referenceName: "0 sessions",
                    goal: .valueAtMost(Self.goalRSSMiB), why: why),
                .skipped(id: "7b", measure: "RSS per session", unit: "KiB", referenceName: "—", goal: .none, why: why),
                .skipped(
                    id: "7c", measure: "Idle CPU with \(title)", unit: "% core", referenceName: "0 sessions",
                    goal: .valueAtMost(Self.goalIdleCPUPercent), why: why),
                .skipped(
                    id: "7d", measure: "Wake-ups/s of the idle daemon with \(title)", unit: "/s",
                    referenceName: "0 sessions", goal: .valueAtMost(Self.goalWakeupsPerSecond), why: why)
            ]
        }
    }

    struct Idle {
        /// Percent of one core.
        let cpuPercent: Double
        /// Context switches of all the daemon's threads per second.
        let wakeupsPerSecond: Double
    }

    /// CPU and wake-ups of the daemon over `seconds` while the clients answer pings (they
    /// poll every 100 ms, far inside the daemon's dead-after limit).
    private func idle(daemon: Parleyd, clients: [NoiseClient], seconds: Int) -> Idle {
        let t0 = daemon.child.cpuTicks() ?? 0
        var wakeups = ContextSwitchMeter(daemon.child)
        let start = Clock.nowNs()
        let end = Deadline(seconds: Double(seconds))
        while !end.passed {
            for c in clients { _ = try? c.answerPings() }
            wakeups.sample()
            Clock.sleep(milliseconds: 100)
        }
        wakeups.sample()
        let t1 = daemon.child.cpuTicks() ?? 0
        let wall = Double(Clock.nowNs() - start) / 1e9
        return Idle(
            cpuPercent: Double(t1 - t0) / ChildProcess.ticksPerSecond / wall * 100,
            wakeupsPerSecond: Double(wakeups.total) / wall)
    }
}
