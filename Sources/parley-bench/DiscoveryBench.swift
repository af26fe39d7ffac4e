import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Row 8: discovery and presence in the LAN lab (scripts/lanlab: network namespaces on a
/// bridge, one avahi-daemon per host, nothing leaves the machine). The lab is built and
/// measured by scripts/bench-discovery.py, which writes one JSON object; this turns it into
/// rows. The script needs root; without it (or without the lab's tools) the rows are
/// skipped with the script's reason, never given a number.
struct DiscoveryBench {
    let smoke: Bool
    let parleyd: String
    let workDir: String

    /// The issue's goals: registration seen within 1.15× avahi's own time; offline after a
    /// clean stop within 50 ms; after a crash within three heartbeat intervals.
    static let registerGoalRatio = 1.15
    static let cleanOfflineGoalMs = 50.0
    static let crashOfflineIntervals = 3.0
    /// Timed rounds of each measurement (the script alternates publishers round by round).
    static let fullRounds = 5
    static let smokeRounds = 1
    /// Bounds on the whole script: a full run takes ~1.5 min (lab up, 5 × 3 registrations,
    /// 5 sessions, 5 link cuts, lab down), a smoke run ~15 s. Beyond these it is stopped.
    static let fullTimeoutSeconds = 480.0
    static let smokeTimeoutSeconds = 60.0
    /// After SIGTERM the script tears the lab down (lanlab down: a few seconds).
    static let teardownGraceSeconds = 30.0
    static let scriptName = "scripts/bench-discovery.py"
    /// How far up from this program's directory the repository root may be
    /// (.build/<triple>/release/parley-bench: three levels).
    static let maxSearchDepth = 6

    private enum ID {
        static let register = "8a", session = "8b", clean = "8c", crash = "8d"
        /// 8a against a reference that also browses on the publishing host, as parleyd does.
        static let registerLike = "8e"
    }

    private static let registerMeasure = "Discovery: start on h1 → seen on h2"
    private static let registerLikeMeasure = "Discovery: start on h1 → seen on h2, reference also browsing"
    private static let sessionMeasure = "Discovery: start on h1 → session with h2 (h2: online)"
    private static let cleanMeasure = "Offline after clean stop (SIGTERM), worst round"
    private static let crashMeasure = "Offline after crash (link cut), worst round"
    private static let publishName = "avahi-publish -s"
    private static let publishBrowseName = "avahi-publish -s + avahi-browse on h1"

    func run() -> [BenchRow] {
        guard geteuid() == 0 else {
            return skippedRows("needs root (network namespaces for the LAN lab): run make bench as root")
        }
        guard let python = findExecutable("python3") else { return skippedRows("python3 not found") }
        guard let script = Self.locateScript() else {
            return skippedRows("\(Self.scriptName) not found (run from the repository)")
        }
        let resultPath = workDir + "/discovery.json"
        let logPath = workDir + "/discovery.log"
        let rounds = smoke ? Self.smokeRounds : Self.fullRounds
        var args = [script, resultPath, "--parleyd", parleyd, "--rounds", String(rounds)]
        if smoke { args.append("--quick") }
        let child: ProcessGroupChild
        do {
            child = try ProcessGroupChild(
                executable: python, arguments: args, logPath: logPath,
                terminateGraceSeconds: Self.teardownGraceSeconds)
        } catch {
            return skippedRows("\(error)")
        }
        let limit = smoke ? Self.smokeTimeoutSeconds : Self.fullTimeoutSeconds
        let finished = child.wait(deadline: Deadline(seconds: limit))
        guard let data = FileManager.default.contents(atPath: resultPath),
            let result = try? JSONDecoder().decode(DiscoveryResult.self, from: data)
        else {
            let why =
                finished
                ? "bench-discovery.py \(child.statusText) without a result"
                : "bench-discovery.py ran longer than \(Int(limit)) s and was stopped"
            return skippedRows(why + ": " + child.logTail(lines: 3))
        }
        if let skipped = result.skipped { return skippedRows(skipped) }
        return rows(result)
    }

    private func rows(_ r: DiscoveryResult) -> [BenchRow] {
        var out: [BenchRow] = []
        let reg = r.register
        let observer = "observer avahi-browse -p on h2, \(fmt((r.browserAgeMs ?? 0) / 1000)) s old; nothing else on h2"

        func registerRow(id: String, measure: String, referenceName: String, reference: [Double]?, extra: String)
            -> BenchRow
        {
            guard let p = reg?.parley, !p.isEmpty else {
                return .skipped(
                    id: id, measure: measure, unit: "ms", referenceName: referenceName,
                    goal: .ratioAtMost(Self.registerGoalRatio), why: r.error("register"))
            }
            let ref = reference.flatMap { $0.isEmpty ? nil : $0 }
            var note =
                "median of \(rounds(p.count)); slowest \(fmt(p.max() ?? 0)) ms"
                + (ref.map { " vs \(fmt($0.max() ?? 0)) ms" } ?? "")
            note += "; " + extra
            if ref == nil { note += "; reference: \(r.error("register"))" }
            return BenchRow(
                id: id, measure: measure, unit: "ms", parley: median(p),
                reference: ref.map(median), referenceName: referenceName,
                goal: .ratioAtMost(Self.registerGoalRatio), note: note)
        }
        out.append(
            registerRow(
                id: ID.register, measure: Self.registerMeasure, referenceName: Self.publishName,
                reference: reg?.reference,
                extra: "rounds alternate publishers; \(observer); avahi-publish alone is seen after avahi's probing"))
        out.append(
            registerRow(
                id: ID.registerLike, measure: Self.registerLikeMeasure, referenceName: Self.publishBrowseName,
                reference: reg?.referenceBrowsing,
                extra: "like parleyd, which browses its own type: a browse on h1 makes avahi answer before probing ends"
            ))

        if let s = r.startToOnline, !s.isEmpty {
            var note =
                "median of \(rounds(s.count)), slowest \(fmt(s.max() ?? 0)) ms; h2's parleyd running and subscribed"
            if let seen = r.seenAfterOnline, !seen.isEmpty {
                note +=
                    "; h1 finds h2 in its avahi's cache and dials at once: h2's observer saw h1's advertisement \(fmt(median(seen))) ms after the session was up"
            }
            out.append(
                BenchRow(
                    id: ID.session, measure: Self.sessionMeasure, unit: "ms", parley: median(s),
                    reference: nil, referenceName: "—", goal: .none, note: note))
        } else {
            out.append(
                .skipped(
                    id: ID.session, measure: Self.sessionMeasure, unit: "ms", referenceName: "—",
                    goal: .none, why: r.error("session")))
        }

        if let c = r.clean, !c.isEmpty {
            out.append(
                BenchRow(
                    id: ID.clean, measure: Self.cleanMeasure, unit: "ms", parley: c.max() ?? 0,
                    reference: nil, referenceName: "—", goal: .valueAtMost(Self.cleanOfflineGoalMs),
                    note:
                        "SIGTERM to h1's parleyd → peer.offline on a subscriber of h2's; \(rounds(c.count)), median \(fmt(median(c))) ms"
                ))
        } else {
            out.append(
                .skipped(
                    id: ID.clean, measure: Self.cleanMeasure, unit: "ms", referenceName: "—",
                    goal: .valueAtMost(Self.cleanOfflineGoalMs), why: r.error("session")))
        }

        // The heartbeat is the kernel keepalive's probe interval (a third of dead-after) or
        // the application ping, whichever is shorter (docs/PROTOCOL.md "Liveness").
        let interval = min(r.pingIntervalMs ?? 0, (r.deadAfterMs ?? 0) / 3)
        let heartbeat =
            "\(fmt(Self.crashOfflineIntervals)) heartbeat intervals (kernel keepalive every \(fmt(interval)) ms: ping \(fmt(r.pingIntervalMs ?? 0)) ms, dead after \(fmt(r.deadAfterMs ?? 0)) ms)"
        if let k = r.crash, !k.isEmpty {
            var note =
                "lanlab cut h1 → peer.offline on h2 (no FIN, no goodbye: only the heartbeat tells); \(rounds(k.count)), median \(fmt(median(k))) ms"
            if let kill = r.kill?.first {
                note += "; SIGKILL of the process instead: \(fmt(kill)) ms (the kernel closes its TCP connection)"
            }
            out.append(
                BenchRow(
                    id: ID.crash, measure: Self.crashMeasure, unit: "ms", parley: k.max() ?? 0,
                    reference: interval > 0 ? Self.crashOfflineIntervals * interval : nil,
                    referenceName: heartbeat, goal: .ratioAtMost(1), note: note))
        } else {
            out.append(
                .skipped(
                    id: ID.crash, measure: Self.crashMeasure, unit: "ms", referenceName: heartbeat,
                    goal: .ratioAtMost(1), why: r.error("crash")))
        }
        return out
    }

    private func skippedRows(_ why: String) -> [BenchRow] {
        [
            .skipped(
                id: ID.register, measure: Self.registerMeasure, unit: "ms", referenceName: Self.publishName,
                goal: .ratioAtMost(Self.registerGoalRatio), why: why),
            .skipped(
                id: ID.registerLike, measure: Self.registerLikeMeasure, unit: "ms",
                referenceName: Self.publishBrowseName,
                goal: .ratioAtMost(Self.registerGoalRatio), why: why),
            .skipped(
                id: ID.session, measure: Self.sessionMeasure, unit: "ms", referenceName: "—", goal: .none, why: why),
            .skipped(
                id: ID.clean, measure: Self.cleanMeasure, unit: "ms", referenceName: "—",
                goal: .valueAtMost(Self.cleanOfflineGoalMs), why: why),
            .skipped(
                id: ID.crash, measure: Self.crashMeasure, unit: "ms", referenceName: "3 heartbeat intervals",
                goal: .ratioAtMost(1), why: why)
        ]
    }

    /// The script, from the working directory (make bench runs in the repository) or
    /// from this program's location inside the repository's .build directory.
    static func locateScript() -> String? {
        let fm = FileManager.default
        var candidates = [fm.currentDirectoryPath]
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<maxSearchDepth {
            candidates.append(dir.path)
            dir = dir.deletingLastPathComponent()
        }
        return candidates.map { $0 + "/" + scriptName }.first { fm.isReadableFile(atPath: $0) }
    }
}

/// What scripts/bench-discovery.py writes (its docstring describes every field; times in ms).
struct DiscoveryResult: Decodable {
    struct Register: Decodable {
        var parley: [Double]?
        var reference: [Double]?
        var referenceBrowsing: [Double]?
    }
    var skipped: String?
    var rounds: Int?
    var pingIntervalMs: Double?
    var deadAfterMs: Double?
    var browserAgeMs: Double?
    var register: Register?
    var startToOnline: [Double]?
    var seenAfterOnline: [Double]?
    var clean: [Double]?
    var crash: [Double]?
    var kill: [Double]?
    var errors: [String: String]?

    func error(_ phase: String) -> String {
        errors?[phase].map { "failed: \($0)" } ?? "no samples"
    }
}

private func rounds(_ n: Int) -> String { n == 1 ? "1 round" : "\(n) rounds" }

/// The middle value (mean of the two middle ones for an even count); 0 when empty.
private func median(_ xs: [Double]) -> Double {
    guard !xs.isEmpty else { return 0 }
    let s = xs.sorted()
    let m = s.count / 2
    return s.count % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2
}
