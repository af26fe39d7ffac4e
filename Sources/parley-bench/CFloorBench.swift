import Foundation

/// The floor beside rows 3i and 4i: a C program that does the durable work of one chat
/// message on both sides with the same SQLite and libsodium as parleyd, and nothing else
/// (`CFloorSource`: a hand-parsed request, the lean schema with one unique index, one
/// transaction per side per batch with synchronous=FULL where parleyd has it, AEAD seal
/// and open, a journal row per event, three small JSON lines). Counted by callgrind like
/// the daemons: the program runs for `count` and for `2 × count` messages and the
/// difference divided by `count` is the figure, so its start (opening the files,
/// creating the schema) is not in it.
struct CFloorBench {
    let workDir: String

    /// Instructions per message, one in flight (batches of 1) and pipelined (batches of
    /// `CallgrindBench.pipelinedWindow`).
    struct Floor {
        var oneInFlight: Double
        var pipelined: Double
    }

    func run(oneInFlightCount: Int, pipelinedCount: Int) throws -> Floor {
        guard let valgrind = findExecutable("valgrind") else {
            throw BenchError.unavailable("valgrind not installed (scripts/install-deps.sh bench)")
        }
        let program = try build()
        func perMessage(count: Int, batch: Int) throws -> Double {
            let once = try instructions(valgrind, program, count: count, batch: batch)
            let twice = try instructions(valgrind, program, count: 2 * count, batch: batch)
            guard twice > once else {
                throw BenchError.protocolError("the C floor's counts did not grow with its work")
            }
            return Double(twice - once) / Double(count)
        }
        return Floor(
            oneInFlight: try perMessage(count: oneInFlightCount, batch: 1),
            pipelined: try perMessage(count: pipelinedCount, batch: CallgrindBench.pipelinedWindow))
    }

    /// Compiles the floor with -O2 (what Debian builds SQLite and libsodium with).
    func build() throws -> String {
        guard let cc = ["cc", "gcc", "clang"].lazy.compactMap({ findExecutable($0) }).first else {
            throw BenchError.unavailable("no C compiler (cc) to build the C floor")
        }
        let source = workDir + "/c-floor.c"
        let program = workDir + "/c-floor"
        do { try CFloorSource.text.write(toFile: source, atomically: true, encoding: .utf8) } catch {
            throw BenchError.io("\(source): \(error)")
        }
        let p = try ChildProcess(
            label: "cc", executable: cc, arguments: ["-O2", "-o", program, source, "-lsqlite3", "-lsodium"],
            logPath: workDir + "/c-floor-build.log")
        guard p.wait(deadline: Deadline(seconds: 120)) == 0 else {
            throw BenchError.process(
                "building the C floor failed (libsqlite3-dev, libsodium-dev: scripts/install-deps.sh): \(p.logTail())")
        }
        return program
    }

    /// Total instructions of one run of `count` messages in batches of `batch`, on fresh files.
    private func instructions(_ valgrind: String, _ program: String, count: Int, batch: Int) throws -> UInt64 {
        let dir = workDir + "/c-floor-\(count)-\(batch)"
        try? FileManager.default.removeItem(atPath: dir)
        do { try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true) } catch {
            throw BenchError.io("\(dir): \(error)")
        }
        let out = dir + "/callgrind.out"
        let p = try ChildProcess(
            label: "c-floor", executable: valgrind,
            arguments: ["--tool=callgrind", "--callgrind-out-file=\(out)", program, dir, "\(count)", "\(batch)"],
            logPath: dir + "/run.log")
        guard p.wait(deadline: Deadline(seconds: 600)) == 0 else {
            throw BenchError.process("the C floor failed: \(p.logTail())")
        }
        return try CallgrindBench.totalInstructions(inDump: out)
    }
}
