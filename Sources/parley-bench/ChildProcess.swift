import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program the benchmark started (parleyd, ngircd, openssl): output to a log file,
/// stopped by its own pid, never by name.
final class ChildProcess: @unchecked Sendable {
    let process = Process()
    let logPath: String
    let label: String
    /// How long a child may take to exit on SIGTERM before it is killed.
    static let stopGraceSeconds = 10.0

    init(
        label: String, executable: String, arguments: [String], logPath: String,
        environment: [String: String]? = nil
    ) throws(BenchError) {
        self.label = label
        self.logPath = logPath
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if let environment { process.environment = environment }
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        guard let log = FileHandle(forWritingAtPath: logPath) else { throw .process("cannot write \(logPath)") }
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { throw .process("cannot start \(executable): \(error)") }
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// SIGTERM, then SIGKILL after the grace period. Idempotent.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        let deadline = Deadline(seconds: Self.stopGraceSeconds)
        while process.isRunning && !deadline.passed { Clock.sleep(milliseconds: 10) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Waits for the program to exit by itself, killing it at the deadline.
    func wait(deadline: Deadline) -> Int32 {
        while process.isRunning && !deadline.passed { Clock.sleep(milliseconds: 10) }
        if process.isRunning { stop() }
        return process.terminationStatus
    }

    func logTail(lines: Int = 20) -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "" }
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    /// Resident set size in KiB (VmRSS in /proc/PID/status).
    func rssKiB() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1])
        }
        return nil
    }

    /// utime + stime in clock ticks (fields 14 and 15 of /proc/PID/stat).
    /// Bytes this process sent to the storage layer so far (`write_bytes` of
    /// /proc/PID/io: counted when a page is dirtied, every thread): the WAL, checkpoints,
    /// anything else it writes.
    func diskWriteBytes() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("write_bytes:") {
            return Int(line.dropFirst("write_bytes:".count).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    func cpuTicks() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name start at field 3 (state).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = Int(fields[11]), let s = Int(fields[12]) else { return nil }
        return u + s
    }

    /// Context switches (voluntary + involuntary) of each thread of the process, by thread
    /// id (/proc/PID/task/*/status): each is a thread waking up or being put to sleep, so
    /// their rate over an idle window is the daemon's wake-ups (issue 21).
    func contextSwitchesByThread() -> [String: Int] {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return [:] }
        var counts: [String: Int] = [:]
        for task in tasks {
            // A thread may end between the listing and the read: it no longer counts.
            guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)
            else { continue }
            var total = 0
            for line in text.split(separator: "\n")
            where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                total += Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).last ?? "") ?? 0
            }
            counts[task] = total
        }
        return counts
    }

    static var ticksPerSecond: Double { Double(sysconf(Int32(_SC_CLK_TCK))) }
}

/// Runs a program to completion (bounded) and returns its exit status and output.
func runToCompletion(_ executable: String, _ arguments: [String], timeout: Double) throws(BenchError) -> (Int32, String)
{
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    let out = Pipe()
    p.standardOutput = out
    p.standardError = out
    p.standardInput = FileHandle.nullDevice
    do { try p.run() } catch { throw .process("cannot start \(executable): \(error)") }
    // Read concurrently so a chatty program never blocks on a full pipe.
    let collected = OutputCollector()
    let reader = Thread { collected.set(out.fileHandleForReading.readDataToEndOfFile()) }
    reader.start()
    let deadline = Deadline(seconds: timeout)
    while p.isRunning && !deadline.passed { Clock.sleep(milliseconds: 10) }
    if p.isRunning { kill(p.processIdentifier, SIGKILL) }
    p.waitUntilExit()
    let readDeadline = Deadline(seconds: 5)
    while collected.get() == nil && !readDeadline.passed { Clock.sleep(milliseconds: 5) }
    let text = String(decoding: collected.get() ?? Data(), as: UTF8.self)
    if deadline.passed { throw .timedOut("\(executable) ran longer than \(Int(timeout)) s") }
    return (p.terminationStatus, text)
}

/// A value handed from one thread to another.
final class OutputCollector: @unchecked Sendable {
    private let lock = NSLock()
    private var data: Data?
    func set(_ d: Data) {
        lock.lock()
        data = d
        lock.unlock()
    }
    func get() -> Data? {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}

/// Looks a program up on PATH (and the sbin directories, where Debian puts ngircd).
func findExecutable(_ name: String) -> String? {
    let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
    for dir in path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin", "/usr/local/sbin"] {
        let candidate = dir + "/" + name
        if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
    }
    return nil
}

/// Wake-ups of a process over a window, from its threads' context switches. Threads come
/// and go (libdispatch ends a worker idle for a few seconds), and an ended thread's counts
/// vanish from /proc: so each thread's count is sampled often, counted from its first
/// sample (or from 0 for a thread born in the window), and kept at its last value seen.
struct ContextSwitchMeter {
    private let child: ChildProcess
    private var first: [String: Int]
    private var last: [String: Int]

    init(_ child: ChildProcess) {
        self.child = child
        first = child.contextSwitchesByThread()
        last = first
    }

    mutating func sample() {
        for (tid, n) in child.contextSwitchesByThread() {
            if first[tid] == nil { first[tid] = 0 }
            last[tid] = n
        }
    }

    /// Context switches since the meter started (call `sample` last).
    var total: Int { last.reduce(0) { $0 + max(0, $1.value - (first[$1.key] ?? 0)) } }
}
