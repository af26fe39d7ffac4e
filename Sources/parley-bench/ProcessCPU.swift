import Foundation

/// CPU time a process has used, in nanoseconds: the sum over its threads of the first
/// field of /proc/PID/task/TID/schedstat (time on a CPU, user and system, the same time
/// utime + stime count but in ns rather than 10 ms ticks). Rows 11 and 13 divide a few
/// milliseconds of CPU among tens of members, below the tick's resolution.
/// Threads that exited are no longer counted; parleyd's threads live as long as it does.
enum ProcessCPU {
    static func nanoseconds(pid: Int32) -> UInt64? {
        let dir = "/proc/\(pid)/task"
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return nil }
        var total: UInt64 = 0
        for t in tasks {
            guard let text = try? String(contentsOfFile: "\(dir)/\(t)/schedstat", encoding: .utf8),
                let first = text.split(separator: " ").first, let ns = UInt64(first)
            else { continue }
            total += ns
        }
        return total
    }
}
