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

    public func check(lastReceived: MonotonicInstant, lastSent: MonotonicInstant, now: MonotonicInstant) -> Verdict {
        if now - lastReceived > deadAfter { return .dead }
        if now - lastSent >= pingInterval || now - lastReceived >= pingInterval { return .ping }
        return .healthy
    }
}
