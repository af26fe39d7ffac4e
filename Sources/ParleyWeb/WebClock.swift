/// Seconds on a monotonic clock since this process started: the time the pure parts
/// (`WebRateLimit`) are given.
enum WebClock {
    private static let start = ContinuousClock.now

    static func now() -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
