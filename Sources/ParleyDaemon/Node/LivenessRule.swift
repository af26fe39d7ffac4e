import NIOCore

/// When to ping a peer and when to give it up for dead (docs/PROTOCOL.md "Liveness").
/// Pure: the keepalive tick asks it once per session with the session's clocks.
struct LivenessRule: Sendable {
    /// Silence (nothing received) before a ping, and between pings while it lasts.
    var pingInterval: TimeAmount
    /// Silence after which the peer is dead: its connection is dropped without a close record.
    var deadAfter: TimeAmount

    enum Verdict: Equatable { case nothing, ping, dead }

    /// - `lastReceived`: when the last bytes came from the peer.
    /// - `lastSent`: when this node last sent anything on the session.
    /// - `lastPing`: when this node last pinged on it (nil: never).
    func verdict(now: NIODeadline, lastReceived: NIODeadline, lastSent: NIODeadline,
                 lastPing: NIODeadline?) -> Verdict {
        if now - lastReceived > deadAfter { return .dead }
        // One ping per interval while the peer is silent: the keepalive tick runs five
        // times per interval, and re-pinging on every tick (as parleyd 1.0 did) sends
        // five pings where the document promises one.
        let pingedRecently = lastPing.map { now - $0 < pingInterval } ?? false
        if now - lastReceived >= pingInterval && !pingedRecently { return .ping }
        // A node that has sent nothing for an interval pings too, so that the peer hears
        // from it before its own silence timer starts asking.
        if now - lastSent >= pingInterval { return .ping }
        return .nothing
    }
}
