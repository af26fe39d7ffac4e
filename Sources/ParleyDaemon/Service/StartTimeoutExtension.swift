/// When to ask systemd for more start-up time, and by how much (sd_notify(3)
/// "EXTEND_TIMEOUT_USEC="). Pure: the time comes in as an argument, the sending is
/// `StartTimeoutKeeper`'s.
///
/// Why: the shipped units are Type=notify with systemd's start timeout (90 s by default),
/// and parleyd upgrades its message store before it can say READY=1. On a big store or a
/// slow disk one migration can take longer than that; systemd would kill the daemon
/// mid-migration, the transaction would roll back, Restart= would start it into the same
/// migration, forever. So while long start-up work shows progress, each look asks for
/// `Limits.grant` more from now.
///
/// A hung upgrade must still be stopped, so progress is what earns time, not mere
/// liveness: the work reports a count that moves only while it works (for the store, SQLite
/// VM instructions: `StoreUpgradeProgress`). When the count has not moved for
/// `Limits.stallGrace`, no more extensions are asked for; systemd's own timeout applies
/// again, at the latest `Limits.grant` later (90 s after the last progress with the
/// standard limits, or the unit's TimeoutStartSec= if that ends later). Should the count
/// move again before then, extending resumes. A count that moves forever (a migration
/// looping inside SQLite) is bounded by `Limits.maxStartup` for the whole start-up.
///
/// The watchdog (WatchdogSec= in both units) needs nothing here: systemd arms it only when
/// the start-up completes (on READY=1; a WATCHDOG=1 sent before would arm it early, so none
/// is sent), and EXTEND_TIMEOUT_USEC pushes a running watchdog's deadline out too.
public struct StartTimeoutExtension: Sendable {
    /// The limits, each with its reason; tests pass shorter ones.
    public struct Limits: Equatable, Sendable {
        /// How often the keeper looks at the work: often enough that `grant` is six
        /// looks long (a late wake-up on a loaded machine never lets it lapse), rarely
        /// enough to cost nothing (start-up only).
        public var tick: Duration
        /// How often it looks while no long work runs (most of a start-up takes well under
        /// a second): a quarter second, so the first extension follows the start of an
        /// upgrade that soon, well inside even a start timeout of a few seconds.
        public var idleTick: Duration
        /// Asked for at each look while the work progresses, counted from now: six ticks.
        public var grant: Duration
        /// How long the progress count may stand still before extending stops. SQLite runs
        /// no instructions while it waits for the disk (the fsync of a big transaction, a
        /// checkpoint) or sorts externally, which on a slow or busy disk can take tens of
        /// seconds; 60 s covers that, and with `grant` a hang is stopped 90 s after its
        /// last progress: systemd's default start timeout, the time an admin already expects.
        public var stallGrace: Duration
        /// The longest start-up extended at all. 1,000,000 messages took 77 s to upgrade in
        /// a debug build (lean-messages-v1 49 s, message-checks-without-lists-v1 28 s); six
        /// hours is ~280 times that: a store ten times larger on a disk twenty times slower
        /// still fits, and a runaway migration (whose SQLite count keeps moving) is stopped.
        public var maxStartup: Duration

        public init(
            tick: Duration, idleTick: Duration, grant: Duration, stallGrace: Duration, maxStartup: Duration
        ) {
            self.tick = tick
            self.idleTick = idleTick
            self.grant = grant
            self.stallGrace = stallGrace
            self.maxStartup = maxStartup
        }

        public static let standard = Limits(
            tick: .seconds(5), idleTick: .milliseconds(250), grant: .seconds(30), stallGrace: .seconds(60),
            maxStartup: .seconds(6 * 3600))
    }

    /// Long start-up work as seen at one look: what it is (for the admin) and its count.
    public struct Work: Equatable, Sendable {
        /// Shown in `systemctl status`, e.g. "upgrading the message store (lean-messages-v1, 2 of 3)".
        public let description: String
        /// Moves while the work progresses; nothing else is assumed about it.
        public let progress: UInt64

        public init(description: String, progress: UInt64) {
            self.description = description
            self.progress = progress
        }
    }

    /// What to tell systemd now.
    public enum Action: Equatable, Sendable {
        /// Nothing (no long work running, or nothing new to say).
        case none
        /// "EXTEND_TIMEOUT_USEC=<microseconds>" with "STATUS=<status>".
        case extend(microseconds: UInt64, status: String)
        /// "STATUS=<status>" alone: extending stopped (the work stalled or start-up took
        /// longer than `maxStartup`); said once per stall.
        case status(String)
    }

    public let limits: Limits
    /// When start-up began (the keeper's clock).
    private let startedAt: Duration
    private var lastProgress: UInt64?
    private var lastDescription: String?
    private var lastProgressAt: Duration
    /// Whether the stop of extending was already said (reset when progress resumes).
    private var saidStopped = false
    /// Whether `maxStartup` was passed (and said): never reset.
    private var saidPastCeiling = false

    public init(startedAt: Duration, limits: Limits = .standard) {
        self.startedAt = startedAt
        self.limits = limits
        self.lastProgressAt = startedAt
    }

    /// One look at `work` (nil: no long work is running) at time `now`, a monotonic clock.
    public mutating func look(now: Duration, work: Work?) -> Action {
        guard let work else { return .none }
        if work.progress != lastProgress || work.description != lastDescription {
            // New work, or the count moved: progress.
            if lastProgress != nil { saidStopped = false }
            lastProgress = work.progress
            lastDescription = work.description
            lastProgressAt = now
            // The very first look has nothing to compare with: starting work counts as
            // progress, and its stall is measured from here.
        }
        let elapsed = now - startedAt
        let since = Self.seconds(elapsed)
        if elapsed > limits.maxStartup {
            // For good: the count moving is no longer believed.
            guard !saidPastCeiling else { return .none }
            saidPastCeiling = true
            return .status(
                "\(work.description): still running after \(since) s, longer than any upgrade should take; "
                    + "no more start-up time asked for")
        }
        let stalled = now - lastProgressAt
        if stalled > limits.stallGrace {
            return stopped(
                "\(work.description): no progress for \(Self.seconds(stalled)) s; "
                    + "systemd's start timeout applies again")
        }
        return .extend(
            microseconds: Self.microseconds(limits.grant),
            status: "\(work.description), \(since) s so far; it is safe to wait")
    }

    /// When to look again after a look that saw `work`.
    public func nextLook(after work: Work?) -> Duration { work == nil ? limits.idleTick : limits.tick }

    private mutating func stopped(_ status: String) -> Action {
        guard !saidStopped else { return .none }
        saidStopped = true
        return .status(status)
    }

    static func microseconds(_ d: Duration) -> UInt64 {
        let (seconds, attoseconds) = d.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000 + UInt64(attoseconds / 1_000_000_000_000)
    }

    private static func seconds(_ d: Duration) -> Int64 { max(0, d.components.seconds) }
}
