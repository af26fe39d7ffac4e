import Foundation
import Logging
import ParleyStore

/// Performs `StartTimeoutExtension` during start-up: a thread of its own looks at the long
/// work (every `limits.tick` while it runs, `limits.idleTick` otherwise) and sends what the decision says to systemd. Its own thread,
/// because the work it watches (the store's migrations) blocks the thread that runs it.
/// Started before the store opens, stopped before READY=1 (nothing is sent after `stop()`
/// returns).
final class StartTimeoutKeeper: @unchecked Sendable {
    private let notifier: SystemdNotifier
    private let work: @Sendable () -> StartTimeoutExtension.Work?
    private let log: Logger
    private let limits: StartTimeoutExtension.Limits
    /// Guards `stopping`, `running` and `looks`.
    private let condition = NSCondition()
    private var stopping = false
    private var running = false
    private var looks = 0

    init(
        notifier: SystemdNotifier, limits: StartTimeoutExtension.Limits = .standard, log: Logger,
        work: @escaping @Sendable () -> StartTimeoutExtension.Work?
    ) {
        self.notifier = notifier
        self.limits = limits
        self.log = log
        self.work = work
    }

    /// The store's upgrade as long start-up work.
    static func work(of upgrade: StoreUpgradeProgress) -> @Sendable () -> StartTimeoutExtension.Work? {
        {
            upgrade.current.map {
                .init(
                    description: "upgrading the message store (\($0.name), \($0.index) of \($0.count))",
                    progress: $0.marks)
            }
        }
    }

    /// Looks done so far (tests wait on it).
    var lookCount: Int { condition.withLock { looks } }

    func start() {
        condition.withLock { running = true }
        let thread = Thread { [self] in run() }
        thread.name = "parley.start-timeout"
        thread.start()
    }

    /// Stops the thread and waits for it; idempotent.
    func stop() {
        condition.lock()
        defer { condition.unlock() }
        stopping = true
        condition.broadcast()
        // Bounded: the thread is either waiting (woken just now) or sending one datagram.
        while running { condition.wait() }
    }

    private func run() {
        var decision = StartTimeoutExtension(startedAt: Self.now(), limits: limits)
        var announced: String?
        condition.lock()
        while !stopping {
            condition.unlock()
            let current = work()
            if let current, current.description != announced {
                announced = current.description
                log.info("\(current.description); this can take minutes on a big store")
            }
            switch decision.look(now: Self.now(), work: current) {
            case .none:
                break
            case .extend(let microseconds, let status):
                if case .failure(let error) = notifier.extendTimeout(microseconds: microseconds, status: status) {
                    log.warning("cannot ask systemd for more start-up time: \(error)")
                }
            case .status(let status):
                log.warning("\(status)")
                _ = notifier.status(status)
            }
            condition.lock()
            looks += 1
            condition.broadcast()
            let wakeAt = Date().addingTimeInterval(Self.seconds(decision.nextLook(after: current)))
            while !stopping, condition.wait(until: wakeAt) {}
        }
        running = false
        condition.broadcast()
        condition.unlock()
    }

    private static func now() -> Duration { .microseconds(Int64(SystemdNotifier.monotonicMicroseconds())) }

    private static func seconds(_ d: Duration) -> TimeInterval {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
