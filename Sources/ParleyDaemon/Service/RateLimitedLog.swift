import Foundation
import Logging

/// Logs an event at most once per key per interval: for events an attacker can
/// trigger at will (failed handshakes, malformed frames), keyed by source, so the
/// journal gets one line per source rather than one per packet.
///
/// The next line logged for a key carries `suppressed=N` when N events were held back;
/// `flush()` (call it periodically, e.g. every interval) reports keys that went quiet
/// with a debt of suppressed events. Thread-safe. A small wrapper: the lines go to the
/// swift-log `Logger` it is given, at `level`.
public final class RateLimitedLog: @unchecked Sendable {
    // @unchecked Sendable: `limiter` is only touched while holding `lock`.
    private let lock = NSLock()
    private var limiter: RateLimiter
    private let logger: Logging.Logger
    private let level: Logging.Logger.Level
    private let now: @Sendable () -> ContinuousClock.Instant

    /// Sources tracked at once: a LAN has far fewer hosts; beyond this, new sources
    /// share one window so memory stays bounded during a flood of spoofed sources.
    public static let defaultMaxKeys = 1024

    public init(
        logger: Logging.Logger, level: Logging.Logger.Level, interval: Duration, maxKeys: Int = defaultMaxKeys,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.logger = logger
        self.level = level
        self.limiter = RateLimiter(interval: interval, maxKeys: maxKeys)
        self.now = now
    }

    /// Logs `message` unless `key` was logged within the interval. Returns whether it was logged.
    @discardableResult
    public func log(key: String, _ message: String, _ metadata: [String: String] = [:]) -> Bool {
        let time = now()
        let (decision, summaries): (RateLimiter.Decision, [RateLimiter.Summary]) = locked {
            // A full table: make room by retiring quiet keys before falling back to the
            // shared overflow window.
            let summaries = limiter.isFull && !limiter.isTracking(key) ? limiter.drainExpired(at: time) : []
            return (limiter.record(key, message: message, at: time), summaries)
        }
        report(summaries)
        guard case .emit(let suppressedBefore) = decision else { return false }
        var metadata = metadata
        if suppressedBefore > 0 { metadata["suppressed"] = String(suppressedBefore) }
        logger.log(level, message, metadata)
        return true
    }

    /// Reports and forgets keys whose interval has passed with events still unreported.
    public func flush() {
        let time = now()
        report(locked { limiter.drainExpired(at: time) })
    }

    /// Suppressed events for `key` not yet reported.
    public func suppressedCount(for key: String) -> Int { locked { limiter.suppressedCount(for: key) } }

    /// All events suppressed since creation.
    public var totalSuppressed: Int { locked { limiter.totalSuppressed } }

    private func report(_ summaries: [RateLimiter.Summary]) {
        for summary in summaries {
            logger.log(
                level, summary.lastMessage,
                ["key": summary.key, "suppressed": String(summary.suppressed)])
        }
    }

    private func locked<Result>(_ body: () -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
