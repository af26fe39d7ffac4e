/// Row 7: one daemon with many peer sessions, each peer an in-process client with its
/// own identity and card speaking the real protocol. Memory from VmRSS, CPU from
/// utime + stime, both read from /proc for the daemon's pid.
struct ScaleBench {
    let scale: BenchScale
    let binary: String
    let workDir: String

    /// The goal for resident memory with 200 sessions.
    static let goalRSSMiB = 64.0
    /// "Idle CPU ≈ 0": at most this percentage of one core. Each session is pinged after
    /// 5 s of silence (the keepalive), so it cannot be exactly zero.
    static let goalIdleCPUPercent = 1.0
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
            let baseCPU = idleCPU(daemon: daemon, clients: [], seconds: scale.baselineIdleSeconds)

            var clients: [NoiseClient] = []
            defer { for c in clients { c.close() } }
            let deadline = Deadline(seconds: scale.rowSeconds)
            for i in 0..<n {
                guard !deadline.passed else { throw BenchError.timedOut("only \(i) of \(n) sessions opened") }
                let me = try BenchIdentity(name: String(format: "scale-%04d", i))
                let c = try NoiseClient.connect(port: daemon.port, as: me, deadline: Deadline(seconds: 10))
                try c.pingPong(1, deadline: Deadline(seconds: 10))
                clients.append(c)
            }
            let online = Deadline(seconds: 20)
            while daemon.peersOnline() < n && !online.passed { Clock.sleep(milliseconds: 50) }
            let up = daemon.peersOnline()
            guard up >= n else { throw BenchError.protocolError("daemon reports \(up) of \(n) sessions online") }
            let cpu = idleCPU(daemon: daemon, clients: clients, seconds: scale.idleSeconds)
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
                    parley: cpu, reference: baseCPU,
                    referenceName: "same daemon, 0 sessions, \(scale.baselineIdleSeconds) s",
                    goal: .valueAtMost(Self.goalIdleCPUPercent),
                    note: "peers answer the daemon's keepalive pings; tick = 1/\(Int(ChildProcess.ticksPerSecond)) s")
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
                    goal: .valueAtMost(Self.goalIdleCPUPercent), why: why)
            ]
        }
    }

    /// CPU used by the daemon over `seconds`, in percent of one core, while the clients
    /// answer pings (they poll every 100 ms, far inside the daemon's 15 s dead-peer limit).
    private func idleCPU(daemon: Parleyd, clients: [NoiseClient], seconds: Int) -> Double {
        let t0 = daemon.child.cpuTicks() ?? 0
        let start = Clock.nowNs()
        let end = Deadline(seconds: Double(seconds))
        while !end.passed {
            for c in clients { _ = try? c.answerPings() }
            Clock.sleep(milliseconds: 100)
        }
        let t1 = daemon.child.cpuTicks() ?? 0
        let wall = Double(Clock.nowNs() - start) / 1e9
        return Double(t1 - t0) / ChildProcess.ticksPerSecond / wall * 100
    }
}
