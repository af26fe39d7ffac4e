/// Dials per host for advertised addresses: a token bucket per host (a burst, then one
/// dial per interval), over a bounded table of hosts. Anyone on the LAN can advertise any
/// address; this bounds what a fake advertisement can make this node send to a victim.
public struct DialRateLimit: Sendable, Equatable {
    /// Dials allowed at once to a host (an honest peer answers the first one).
    public let burst: Int
    /// After the burst, one dial per this interval.
    public let interval: Duration
    /// Hosts remembered; the oldest is forgotten beyond this (bounded memory).
    public let maxHosts: Int

    private var buckets: [String: TokenBucket] = [:]
    private var order: [String] = []

    public init(
        burst: Int = NodeLimits.advertisedDialBurst, interval: Duration = NodeLimits.advertisedDialInterval,
        maxHosts: Int = NodeLimits.trackedSources
    ) {
        self.burst = burst
        self.interval = interval
        self.maxHosts = maxHosts
    }

    /// Takes a dial for `host` now: nil if allowed, else how long until one is.
    public mutating func take(host: String, now: MonotonicInstant) -> Duration? {
        var b = buckets[host] ?? TokenBucket(burst: burst, now: now)
        if buckets[host] == nil {
            order.append(host)
            if order.count > maxHosts { buckets[order.removeFirst()] = nil }
        }
        defer { buckets[host] = b }
        return b.take(burst: burst, interval: interval, now: now)
    }

    public var trackedHosts: Int { buckets.count }
}
