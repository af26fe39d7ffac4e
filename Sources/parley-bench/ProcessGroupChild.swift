import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program started with `posix_spawn` in a process group of its own, output to a log
/// file, waited for with `waitpid` under a deadline.
///
/// Foundation's `Process` is not used here: on Linux it learns that a child exited when a
/// socket the child inherited is closed, so a child that leaves daemons behind holding that
/// socket (the LAN lab's avahi and D-Bus daemons) is never reported as exited. `waitpid`
/// on the child's own pid has no such problem, and the group lets the deadline reach
/// everything the child started that did not leave it.
final class ProcessGroupChild {
    let pid: pid_t
    let logPath: String
    private(set) var exitStatus: Int32?

    /// Grace after SIGTERM to the group before SIGKILL: the child may have cleanup to do
    /// (the lab script tears its namespaces down, which takes a few seconds).
    let terminateGraceSeconds: Double
    /// How often the bounded wait polls `waitpid`.
    static let pollMilliseconds = 50
    /// After SIGKILL the kernel ends the process at once; this only bounds a wait that
    /// should never be needed.
    static let reapAfterKillSeconds = 5.0

    init(
        executable: String, arguments: [String], logPath: String,
        terminateGraceSeconds: Double
    ) throws(BenchError) {
        self.logPath = logPath
        self.terminateGraceSeconds = terminateGraceSeconds
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A new group (pgid = its pid), default handling of the signals the child must obey,
        // and no signal blocked (whatever this process blocks).
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for s in [SIGTERM, SIGINT, SIGPIPE, SIGCHLD] { sigaddset(&defaults, s) }
        var noneBlocked = sigset_t()
        sigemptyset(&noneBlocked)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &noneBlocked)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of this process leaks into the child (and from it into daemons).
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        let argv: [UnsafeMutablePointer<CChar>?] = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for p in argv { free(p) } }
        var child: pid_t = 0
        let rc = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw .process("cannot start \(executable): \(String(cString: strerror(rc)))") }
        pid = child
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), looked up at run
    /// time because the Glibc module does not declare it. Without it the child inherits this
    /// process's other descriptors, which is harmless while no other child is running.
    private static let addCloseFrom:
        (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
            guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
            return unsafeBitCast(
                symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
        }()

    /// Reaps the child if it has exited; true once it has.
    private func reaped() -> Bool {
        if exitStatus != nil { return true }
        var status: Int32 = 0
        let r = waitpid(pid, &status, WNOHANG)
        if r == pid {
            exitStatus = status
            return true
        }
        // ECHILD: nothing left to wait for (cannot happen for our own child; do not spin).
        if r < 0 && errno != EINTR {
            exitStatus = -1
            return true
        }
        return false
    }

    /// Waits until the child exits or the deadline passes; at the deadline the whole group
    /// gets SIGTERM, then SIGKILL after the grace period. True if it exited by itself.
    func wait(deadline: Deadline) -> Bool {
        while !reaped() {
            if deadline.passed {
                terminateGroup()
                return false
            }
            Clock.sleep(milliseconds: Self.pollMilliseconds)
        }
        return true
    }

    private func terminateGroup() {
        kill(-pid, SIGTERM)
        let grace = Deadline(seconds: terminateGraceSeconds)
        while !reaped() && !grace.passed { Clock.sleep(milliseconds: Self.pollMilliseconds) }
        kill(-pid, SIGKILL)
        let reap = Deadline(seconds: Self.reapAfterKillSeconds)
        while !reaped() && !reap.passed { Clock.sleep(milliseconds: Self.pollMilliseconds) }
    }

    /// "exit 0", "exit 3", "signal 9", or "running".
    var statusText: String {
        guard let s = exitStatus else { return "running" }
        if s < 0 { return "unknown" }
        return s & 0x7f == 0 ? "exit \((s >> 8) & 0xff)" : "signal \(s & 0x7f)"
    }

    var exitedCleanly: Bool { exitStatus.map { $0 & 0x7f == 0 && ($0 >> 8) & 0xff == 0 } ?? false }

    func logTail(lines: Int) -> String {
        guard let text = try? String(contentsOfFile: logPath, encoding: .utf8) else { return "" }
        return text.split(separator: "\n").suffix(lines).joined(separator: " | ")
    }
}
