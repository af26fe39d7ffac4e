/// Seconds on a monotonic clock since this process started: the time the pure parts
/// (`WebSessions`, `WebRateLimit`) are given. Wall-clock jumps do not lengthen a token's life.
enum WebClock {
    private static let start = ContinuousClock.now

    static func now() -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
