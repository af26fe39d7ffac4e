/// Liveness of an established session (docs/PROTOCOL.md, "Liveness"): ping when the line
/// has been quiet, declare the peer dead when nothing arrived for too long.
public struct KeepalivePolicy: Sendable, Equatable {
    public enum Verdict: Sendable, Equatable {
        case healthy
        /// Send a ping now.
        case ping
        /// Nothing arrived for `deadAfter`: close the session.
        case dead
    }

    /// Send a ping when nothing was sent or nothing was received for this long.
    public var pingInterval: Duration
    /// A session that received nothing for this long is dead (three missed pings).
    public var deadAfter: Duration

    public init(pingInterval: Duration = .seconds(5), deadAfter: Duration = .seconds(15)) {
        self.pingInterval = pingInterval
        self.deadAfter = deadAfter
    }

    /// How often the driver should call `check` so a ping is never more than a fifth of an
    /// interval late (and at most ten times a second).
    public var tickInterval: Duration { max(pingInterval / 5, .milliseconds(100)) }

    /// - `lastPing`: when the driver last sent a ping on this session (nil: never).
    public func check(
        lastReceived: MonotonicInstant, lastSent: MonotonicInstant, now: MonotonicInstant,
        lastPing: MonotonicInstant? = nil
    ) -> Verdict {
        if now - lastReceived > deadAfter { return .dead }
        // One ping per interval while the peer is silent (docs/PROTOCOL.md "Liveness"): the
        // tick runs five times per interval, and pinging on every tick once the silence
        // began sent five pings where the document promises one.
        let pingedRecently = lastPing.map { now - $0 < pingInterval } ?? false
        if now - lastReceived >= pingInterval && !pingedRecently { return .ping }
        // Quiet ourselves for an interval: ping so the peer hears from us.
        if now - lastSent >= pingInterval { return .ping }
        return .healthy
    }
}
