/// The node's two clocks, injected so that every time-dependent decision can be tested
/// with a clock a test moves by hand (`ManualNodeClock` in the tests).
public protocol NodeClock: Sendable {
    /// For timeouts, backoff and liveness: never jumps.
    func monotonicNow() -> MonotonicInstant
    /// Unix time in milliseconds, for timestamps stored with messages and cards. Only
    /// stamped on records; never used to measure an interval.
    func wallMilliseconds() -> Int64
}
