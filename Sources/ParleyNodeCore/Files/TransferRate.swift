/// The rate and progress events of one transfer: at most one `file.progress` per
/// `interval` (a 1 GiB transfer would otherwise emit 16,384), with the rate over the last
/// interval. Pure, on the injected monotonic clock.
public struct TransferRate: Sendable, Equatable {
    public static let interval: Duration = .milliseconds(500)
    private var lastAt: MonotonicInstant?
    private var lastBytes: UInt64 = 0
    /// Bytes per second over the last interval.
    public private(set) var bytesPerSecond: UInt64 = 0

    public init() {}

    /// Whether a progress event is due at `now` with `bytes` done (it updates the rate when it is).
    public mutating func due(bytes: UInt64, now: MonotonicInstant) -> Bool {
        guard let at = lastAt else {
            lastAt = now
            lastBytes = bytes
            return false
        }
        let elapsed = now - at
        guard elapsed >= Self.interval else { return false }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        bytesPerSecond = seconds > 0 ? UInt64(Double(bytes &- min(bytes, lastBytes)) / seconds) : 0
        lastAt = now
        lastBytes = bytes
        return true
    }

    /// Seconds left at the current rate, nil when unknown.
    public func secondsLeft(remaining: UInt64) -> UInt64? {
        bytesPerSecond > 0 ? remaining / bytesPerSecond : nil
    }
}
