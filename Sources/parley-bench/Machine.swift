import Foundation

/// What the numbers were measured on, as the report prints it.
struct Machine: Codable {
    var cpus: Int
    var cpuModel: String
    var memoryMiB: Int
    var kernel: String
    var stateFilesystem: String

    static func describe(workDir: String) -> Machine {
        let cpuinfo = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        let model =
            cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last.map { $0.trimmingCharacters(in: .whitespaces) } ?? "" }
            ?? "unknown"
        let meminfo = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8)) ?? ""
        let memKiB =
            meminfo.split(separator: "\n").first { $0.hasPrefix("MemTotal:") }
            .flatMap { Int($0.split(whereSeparator: { $0 == " " })[1]) } ?? 0
        var u = utsname()
        uname(&u)
        let release = withUnsafeBytes(of: &u.release) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return Machine(
            cpus: ProcessInfo.processInfo.activeProcessorCount, cpuModel: model,
            memoryMiB: memKiB / 1024, kernel: "Linux " + release, stateFilesystem: filesystem(of: workDir))
    }

    /// The 1-minute load average now (/proc/loadavg), or nil where there is none. On a
    /// shared machine it says how much else ran beside the benchmark.
    static func loadAverage() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return nil }
        return text.split(separator: " ").first.flatMap { Double($0) }
    }

    /// The mount's type for `path` (it decides what an fsync costs), from /proc/self/mounts.
    static func filesystem(of path: String) -> String {
        guard let mounts = try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8) else { return "unknown" }
        var best = ("", "unknown")
        for line in mounts.split(separator: "\n") {
            let f = line.split(separator: " ")
            guard f.count > 2 else { continue }
            let mount = String(f[1])
            if (path == mount || path.hasPrefix(mount == "/" ? "/" : mount + "/")) && mount.count > best.0.count {
                best = (mount, "\(f[2]) (\(f[0]) on \(mount))")
            }
        }
        return best.1
    }
}
