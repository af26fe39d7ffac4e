import Foundation

/// Rows 3i and 4i: instructions each daemon executes per message, counted by callgrind.
/// Wall-clock figures on a shared two-core machine move by tens of percent between runs;
/// instruction counts move by a fraction of one, so they are what a change that claims to
/// cut per-message cost is judged by (`valgrind --tool=callgrind`, every thread counted).
///
/// Both daemons of a fresh pair run under callgrind. After a warm-up, their counters are
/// zeroed (`callgrind_control --zero`), the messages sent, and the counters dumped
/// (`callgrind_control --dump`); the dump's `totals:` line divided by the number of
/// messages is the figure.
struct CallgrindBench {
    let scale: BenchScale
    let parleyd: String
    let workDir: String

    static let latencyID = "3i"
    static let pipelinedID = "4i"
    /// The window of the pipelined count: row 4's usual middle window.
    static let pipelinedWindow = 256
    /// How much longer a measurement loop may run under callgrind than natively.
    static let slowdown = 10.0
    /// Issue 32's goals, instructions per message of both daemons together.
    static let latencyGoal = 250_000.0
    static let pipelinedGoal = 120_000.0

    func run() -> [BenchRow] {
        guard let valgrind = findExecutable("valgrind"), let control = findExecutable("callgrind_control") else {
            return skipped(why: "valgrind not installed (scripts/install-deps.sh bench)")
        }
        let launcher = [
            valgrind, "--tool=callgrind", "--callgrind-out-file=\(workDir)/callgrind.%p", "--dump-instr=no",
            "--compress-strings=no"
        ]
        do {
            let binary = try debugInfoStripped(parleyd)
            let shim = try sigsuspendShim()
            let (a, b) = try startPair(
                binary: binary, workDir: workDir, names: ("cg-a", "cg-b"), durability: "full", launcher: launcher,
                extraEnvironment: ["LD_PRELOAD": shim])
            defer {
                a.stop()
                b.stop()
            }
            // Everything runs 20 to 100 times slower under callgrind: the loops keep their
            // counts and get a longer bound.
            var slow = scale
            slow.rowSeconds = scale.rowSeconds * Self.slowdown
            let chat = ParleyChatBench(scale: slow, a: a, b: b)
            _ = try chat.latency(count: 5)  // warm-up: first-use allocations, SQLite page cache
            let daemons = [a, b]
            let one = try counted(daemons, control: control) {
                try chat.latency(count: scale.callgrindLatencyMessages).samples.count
            }
            let many = try counted(daemons, control: control) {
                try chat.pipelined(
                    count: scale.callgrindPipelinedMessages, size: 64, window: Self.pipelinedWindow, prefix: "cg-"
                ).sent
            }
            var floor: CFloorBench.Floor?
            var floorError = ""
            do {
                floor = try CFloorBench(workDir: workDir).run(
                    oneInFlightCount: scale.callgrindLatencyMessages,
                    pipelinedCount: scale.callgrindPipelinedMessages)
            } catch { floorError = "; C floor not measured: \(error)" }
            return [
                row(
                    id: Self.latencyID, measure: "Instructions per message, one in flight (row 3 path)", one,
                    floor: floor?.oneInFlight, goal: Self.latencyGoal, extra: floorError),
                row(
                    id: Self.pipelinedID,
                    measure: "Instructions per message, pipelined at window \(Self.pipelinedWindow) (row 4 path)",
                    many, floor: floor?.pipelined, goal: Self.pipelinedGoal, extra: floorError)
            ]
        } catch {
            return skipped(why: "\(error)")
        }
    }

    /// Instructions per message of each daemon (A, B) over `body`, which returns how many
    /// messages it sent.
    func counted(_ daemons: [Parleyd], control: String, _ body: () throws -> Int) throws -> (
        a: Double, b: Double, messages: Int
    ) {
        for d in daemons { try callgrindControl(control, "--zero", d) }
        let messages = try body()
        guard messages > 0 else { throw BenchError.protocolError("no message went through under callgrind") }
        var perMessage: [Double] = []
        for d in daemons {
            let before = dumps(of: d)
            try callgrindControl(control, "--dump", d)
            let deadline = Deadline(seconds: 30)
            var fresh: [String] = []
            while fresh.isEmpty && !deadline.passed {
                fresh = dumps(of: d).filter { !before.contains($0) }
                if fresh.isEmpty { Clock.sleep(milliseconds: 50) }
            }
            guard let file = fresh.first else { throw BenchError.timedOut("no callgrind dump from \(d.name)") }
            perMessage.append(Double(try Self.totalInstructions(inDump: file)) / Double(messages))
        }
        return (perMessage[0], perMessage[1], messages)
    }

    /// A copy of the daemon without its DWARF sections: Debian 12's valgrind (3.19) gives
    /// up on the DWARF 5 forms Swift 6 emits. The code, and so every count, is the same.
    func debugInfoStripped(_ binary: String) throws -> String {
        guard let objcopy = findExecutable("objcopy") else {
            throw BenchError.unavailable("objcopy not installed (binutils), needed to strip debug info for valgrind")
        }
        let copy = workDir + "/parleyd-for-callgrind"
        let p = try ChildProcess(
            label: "objcopy", executable: objcopy, arguments: ["--strip-debug", binary, copy],
            logPath: workDir + "/objcopy.log")
        guard p.wait(deadline: Deadline(seconds: 120)) == 0 else {
            throw BenchError.process("objcopy --strip-debug failed: \(p.logTail())")
        }
        return copy
    }

    /// Debian 12's valgrind (3.19) writes into the signal mask a program passes to
    /// `sigsuspend`; libdispatch's main-thread loop (`dispatch_main`, which an async `main`
    /// ends in) passes a `const` mask in read-only memory, and valgrind dies of SIGSEGV
    /// before the daemon starts. Preloaded into the daemon, this wrapper hands the kernel a
    /// writable copy of the same mask: nothing the daemon does changes.
    static let sigsuspendShimSource = """
        #define _GNU_SOURCE
        #include <signal.h>
        #include <sys/syscall.h>
        #include <unistd.h>
        int sigsuspend(const sigset_t *mask) {
            sigset_t copy = *mask;
            return (int)syscall(SYS_rt_sigsuspend, &copy, 8);
        }

        """

    func sigsuspendShim() throws -> String {
        guard let cc = ["cc", "gcc", "clang"].lazy.compactMap({ findExecutable($0) }).first else {
            throw BenchError.unavailable("no C compiler (cc) to build valgrind's sigsuspend shim")
        }
        let source = workDir + "/sigsuspend-shim.c"
        let library = workDir + "/sigsuspend-shim.so"
        do { try Self.sigsuspendShimSource.write(toFile: source, atomically: true, encoding: .utf8) } catch {
            throw BenchError.io("\(source): \(error)")
        }
        let p = try ChildProcess(
            label: "cc", executable: cc, arguments: ["-shared", "-fPIC", "-O2", "-o", library, source],
            logPath: workDir + "/sigsuspend-shim.log")
        guard p.wait(deadline: Deadline(seconds: 60)) == 0 else {
            throw BenchError.process("building the sigsuspend shim failed: \(p.logTail())")
        }
        return library
    }

    func callgrindControl(_ control: String, _ command: String, _ d: Parleyd) throws {
        let p = try ChildProcess(
            label: "callgrind_control", executable: control, arguments: [command, "\(d.pid)"],
            logPath: workDir + "/callgrind_control.log")
        guard p.wait(deadline: Deadline(seconds: 60)) == 0 else {
            throw BenchError.process("callgrind_control \(command) \(d.pid) failed: \(p.logTail())")
        }
    }

    /// Dump files of one daemon: `callgrind.PID.N`, one per `--dump`.
    func dumps(of d: Parleyd) -> Set<String> {
        let prefix = "callgrind.\(d.pid)."
        let names = (try? FileManager.default.contentsOfDirectory(atPath: workDir)) ?? []
        return Set(names.filter { $0.hasPrefix(prefix) }.map { workDir + "/" + $0 })
    }

    /// The `totals:` line of a callgrind dump (event Ir only, as `--tool=callgrind` counts
    /// by default); waits for the line, since the daemon writes the file while we look.
    static func totalInstructions(inDump path: String) throws -> UInt64 {
        let deadline = Deadline(seconds: 30)
        while !deadline.passed {
            if let text = try? String(contentsOfFile: path, encoding: .utf8),
                let line = text.split(separator: "\n").first(where: { $0.hasPrefix("totals:") }),
                let n = line.split(separator: " ").last.flatMap({ UInt64($0) })
            {
                return n
            }
            Clock.sleep(milliseconds: 50)
        }
        throw BenchError.timedOut("no totals line in \(path)")
    }

    private func row(
        id: String, measure: String, _ r: (a: Double, b: Double, messages: Int), floor: Double?, goal: Double,
        extra: String
    ) -> BenchRow {
        BenchRow(
            id: id, measure: measure, unit: "instr", parley: r.a + r.b, reference: floor,
            referenceName: "C floor: the same durable work with SQLite + libsodium (CFloorBench)",
            goal: .valueAtMost(goal),
            note: "sender daemon \(fmt(r.a)), receiver daemon \(fmt(r.b)) instructions per message, "
                + "\(r.messages) messages, every thread, release or debug as built" + extra)
    }

    private func skipped(why: String) -> [BenchRow] {
        [
            .skipped(
                id: Self.latencyID, measure: "Instructions per message, one in flight", unit: "instr",
                referenceName: "C floor", goal: .valueAtMost(Self.latencyGoal), why: why),
            .skipped(
                id: Self.pipelinedID, measure: "Instructions per message, pipelined", unit: "instr",
                referenceName: "C floor", goal: .valueAtMost(Self.pipelinedGoal), why: why)
        ]
    }
}
