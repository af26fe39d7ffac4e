/// Decides whether an event is worth logging: at most one per key per interval, with a
/// count of the ones held back. Pure bookkeeping; time is passed in, so it is exact
/// to test. `RateLimitedLog` wraps it around a swift-log `Logger`.
///
/// Every suppressed event is reported exactly once: either in the `suppressedBefore`
/// of the key's next emitted event, or in a `Summary` from `drainExpired(at:)`.
/// At most `maxKeys` keys are tracked so a flood of sources cannot grow memory; once
/// full, new keys share one window under `overflowKey` until expired ones are drained.
public struct RateLimiter: Sendable {
    public enum Decision: Equatable, Sendable {
        /// Log it; `suppressedBefore` events for this key were held back since the last one.
        case emit(suppressedBefore: Int)
        /// Drop it; it has been counted.
        case suppress
    }

    /// Suppressed events of a window that ended with no further event to report them.
    public struct Summary: Equatable, Sendable {
        public let key: String
        public let suppressed: Int
        /// The message of the last suppressed event, to say what was suppressed.
        public let lastMessage: String
    }

    private struct Window {
        var start: ContinuousClock.Instant
        var suppressed: Int
        var lastMessage: String
    }

    /// The shared key for sources that did not fit in the table.
    public static let overflowKey = "(other sources)"

    public let interval: Duration
    public let maxKeys: Int
    private var windows: [String: Window] = [:]
    /// Every event ever suppressed, for a counter in status output.
    public private(set) var totalSuppressed = 0

    public init(interval: Duration, maxKeys: Int) {
        self.interval = interval
        self.maxKeys = max(1, maxKeys)
    }

    /// Keys currently tracked (at most `maxKeys`, plus the overflow key).
    public var trackedKeys: Int { windows.count }

    public var isFull: Bool { windows.count >= maxKeys }

    public func isTracking(_ key: String) -> Bool { windows[key] != nil }

    /// Suppressed events for `key` not yet reported.
    public func suppressedCount(for key: String) -> Int { windows[key]?.suppressed ?? 0 }

    public mutating func record(_ key: String, message: String, at now: ContinuousClock.Instant) -> Decision {
        let key = windows[key] == nil && isFull ? Self.overflowKey : key
        guard var window = windows[key] else {
            windows[key] = Window(start: now, suppressed: 0, lastMessage: "")
            return .emit(suppressedBefore: 0)
        }
        if now - window.start < interval {
            window.suppressed += 1
            window.lastMessage = message
            windows[key] = window
            totalSuppressed += 1
            return .suppress
        }
        windows[key] = Window(start: now, suppressed: 0, lastMessage: "")
        return .emit(suppressedBefore: window.suppressed)
    }

    /// Forgets windows whose interval has passed, returning those that still owe a
    /// report of suppressed events.
    public mutating func drainExpired(at now: ContinuousClock.Instant) -> [Summary] {
        var summaries: [Summary] = []
        for (key, window) in windows where now - window.start >= interval {
            windows[key] = nil
            if window.suppressed > 0 {
                summaries.append(Summary(key: key, suppressed: window.suppressed, lastMessage: window.lastMessage))
            }
        }
        return summaries.sorted { $0.key < $1.key }
    }
}
