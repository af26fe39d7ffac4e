import Foundation

/// CPU time a process has used (utime + stime of /proc/PID/stat, every thread including
/// those that have exited), in nanoseconds. The resolution is one clock tick (10 ms), so
/// rows 11 and 13 add it up over whole runs (tens of ticks), never per message.
/// (Summing /proc/PID/task/*/schedstat would give ns, but loses the time of threads that
/// exit between two readings: parleyd's worker threads come and go, and the sum can
/// even go down.)
enum ProcessCPU {
    static func nanoseconds(pid: Int32) -> UInt64? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after the command name start at field 3 (state); utime, stime are 14, 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let u = UInt64(fields[11]), let s = UInt64(fields[12]) else { return nil }
        return (u + s) * UInt64(1e9 / ChildProcess.ticksPerSecond)
    }

    /// CPU used between two readings; 0 if a reading failed.
    static func since(_ start: UInt64?, pid: Int32) -> UInt64 {
        guard let start, let now = nanoseconds(pid: pid), now >= start else { return 0 }
        return now - start
    }
}
