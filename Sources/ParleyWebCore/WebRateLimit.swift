/// A token bucket per WebSocket: `WebLimits.requestBurst` requests at once, refilled at
/// `WebLimits.requestsPerSecond`. Pure: the time (seconds, monotonic) is passed in.
public struct WebRateLimit: Sendable {
    private var tokens: Double
    private var last: Double
    let burst: Double
    let perSecond: Double

    public init(now: Double, burst: Int = WebLimits.requestBurst, perSecond: Int = WebLimits.requestsPerSecond) {
        self.burst = Double(burst)
        self.perSecond = Double(perSecond)
        tokens = Double(burst)
        last = now
    }

    /// Takes one request if the bucket has room.
    public mutating func take(now: Double) -> Bool {
        if now > last {
            tokens = min(burst, tokens + (now - last) * perSecond)
            last = now
        }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
