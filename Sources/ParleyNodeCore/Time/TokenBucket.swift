/// One token bucket on an injected clock: up to `burst` tokens, one more each `interval`;
/// an action takes a token or waits. The rate limits keyed by host (`DialRateLimit`) or by
/// sender (`RefusalRecordLimit`) keep one per key.
public struct TokenBucket: Sendable, Equatable {
    public private(set) var tokens: Double
    public private(set) var last: MonotonicInstant

    /// A full bucket: an unseen key gets its whole burst.
    public init(burst: Int, now: MonotonicInstant) {
        tokens = Double(burst)
        last = now
    }

    /// Refills for the time since the last call (never more than `burst`; an earlier `now`
    /// adds nothing), then takes a token: nil if one was taken, else how long until one is.
    public mutating func take(burst: Int, interval: Duration, now: MonotonicInstant) -> Duration? {
        let perToken = Double(interval.wholeNanoseconds)
        let elapsed = Double(max(0, (now - last).wholeNanoseconds))
        tokens = min(Double(burst), tokens + elapsed / perToken)
        last = max(last, now)
        guard tokens >= 1 else { return .nanoseconds(Int64(((1 - tokens) * perToken).rounded(.up))) }
        tokens -= 1
        return nil
    }
}
