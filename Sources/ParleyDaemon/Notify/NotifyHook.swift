import NIOCore
import ParleyStore

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `notify_command` for every incoming message (so a desktop user can wire
/// `notify-send`), without a shell, with the metadata in environment variables
/// (`NotifyHookEnvironment`). Bounded: a few hooks at a time, a short queue, a timeout.
/// Runs on the node's event loop, like the node; that confinement is what makes
/// `@unchecked Sendable` honest.
final class NotifyHook: NodeObserver, @unchecked Sendable {
    /// Hook processes alive at once: a burst of messages must not fork-bomb the host.
    static let maxRunning = 4
    /// Messages waiting for a free slot; beyond this, hooks are skipped (and that is
    /// logged): a notification about message 200 of a burst is noise anyway.
    static let maxWaiting = 32
    /// A hook still running after this long gets SIGTERM (its whole process group)...
    static let timeout: TimeAmount = .seconds(10)
    /// ...and SIGKILL this much later if it is still there.
    static let killGrace: TimeAmount = .seconds(2)
    /// How often running hooks are reaped (waitpid, WNOHANG) while any exist.
    static let reapInterval: TimeAmount = .milliseconds(100)

    private struct Running {
        let started: NIODeadline
        var terminated = false
    }

    private let loop: EventLoop
    private let log: Logger
    private let problems: RateLimitedLog
    private let baseEnvironment: [String: String]
    private var command: [String]?
    private var includeBody: Bool
    private var waiting: [[String]] = []
    private var running: [pid_t: Running] = [:]
    private var reaper: RepeatedTask?

    init(loop: EventLoop, log: Logger, environment: [String: String], command: [String]?, includeBody: Bool) {
        self.loop = loop
        self.log = log
        self.problems = RateLimitedLog(logger: log, level: .warning, interval: .seconds(60))
        self.baseEnvironment = environment
        self.command = command
        self.includeBody = includeBody
    }

    /// Configuration reload. On the node's loop.
    func update(command: [String]?, includeBody: Bool) {
        loop.preconditionInEventLoop()
        self.command = command
        self.includeBody = includeBody
        if command == nil { waiting.removeAll() }
    }

    /// Daemon shutdown: hooks still running are asked to stop; nothing queued starts.
    func stop() {
        loop.preconditionInEventLoop()
        waiting.removeAll()
        for pid in running.keys { kill(-pid, SIGTERM) }
    }

    func node(_ node: Node, didEmit event: NodeEvent) {
        guard command != nil else { return }
        if case let .file(rec, kind, _) = event, rec.direction == .incoming, kind == .offered || kind == .completed {
            let env = NotifyHookEnvironment.make(
                base: baseEnvironment,
                message: .init(
                    fromName: node.displayName(of: rec.peer), fromFingerprint: Node.fingerprint(of: rec.peer),
                    id: rec.transfer.hex, receivedAt: rec.updatedAt, body: rec.caption,
                    room: rec.room.map { "#" + node.roomDisplayName(of: $0) },
                    file: (rec.name, rec.size, kind == .offered ? "offered" : "completed")),
                includeBody: includeBody)
            run(env)
            return
        }
        guard case .messageReceived(let m) = event else { return }
        let env = NotifyHookEnvironment.make(
            base: baseEnvironment,
            message: .init(
                fromName: node.displayName(of: m.sender), fromFingerprint: Node.fingerprint(of: m.sender),
                id: m.id.hex, receivedAt: m.receivedAt ?? Node.nowMs(), body: m.body,
                room: m.room.map { "#" + node.roomDisplayName(of: $0) }),
            includeBody: includeBody)
        run(env)
    }

    private func run(_ env: [String]) {
        if running.count < Self.maxRunning {
            start(env)
        } else if waiting.count < Self.maxWaiting {
            waiting.append(env)
        } else {
            problems.log(
                key: "full", "notify_command: too many hooks pending; skipping notifications",
                ["running": "\(running.count)", "waiting": "\(waiting.count)"])
        }
    }

    private func start(_ env: [String]) {
        guard let command else { return }
        do {
            let pid = try HookProcess.spawn(command, environment: env)
            running[pid] = Running(started: .now())
            if reaper == nil {
                reaper = loop.scheduleRepeatedTask(initialDelay: Self.reapInterval, delay: Self.reapInterval) {
                    [weak self] _ in
                    self?.reap()
                }
            }
        } catch {
            problems.log(key: "spawn", "notify_command could not be started", ["error": "\(error)"])
        }
    }

    private func reap() {
        let now = NIODeadline.now()
        for (pid, r) in running {
            var status: Int32 = 0
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid || (rc < 0 && errno == ECHILD) {
                running[pid] = nil
                if rc == pid { report(status: status, terminated: r.terminated) }
                continue
            }
            let age = now - r.started
            if age > Self.timeout + Self.killGrace {
                kill(-pid, SIGKILL)
            } else if age > Self.timeout && !r.terminated {
                problems.log(
                    key: "timeout", "notify_command ran too long; stopping it",
                    ["pid": "\(pid)", "timeout_s": "\(Self.timeout.nanoseconds / 1_000_000_000)"])
                kill(-pid, SIGTERM)
                running[pid]?.terminated = true
            }
        }
        while running.count < Self.maxRunning, !waiting.isEmpty, command != nil {
            start(waiting.removeFirst())
        }
        if running.isEmpty {
            reaper?.cancel()
            reaper = nil
        }
    }

    private func report(status: Int32, terminated: Bool) {
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import (they are macros).
        let signal = status & 0x7f
        let code = (status >> 8) & 0xff
        if signal == 0 {
            if code != 0 { problems.log(key: "exit", "notify_command failed", ["status": "\(code)"]) }
        } else if !terminated {
            problems.log(key: "signal", "notify_command was killed by a signal", ["signal": "\(signal)"])
        }
    }
}
