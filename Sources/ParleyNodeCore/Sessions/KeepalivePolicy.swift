/// Liveness of an established session (docs/PROTOCOL.md, "Liveness"), the part the daemon
/// decides itself. A cut link or a vanished host is the kernel's to notice
/// (`KernelKeepalive`: TCP keepalive probes are sent and answered without waking either
/// daemon); what only an application ping can tell is that the peer's *daemon* still reads
/// and answers. So a session is pinged only after a long silence (`pingInterval`, ten
/// minutes by default), and is dead when such a ping stays unanswered for `deadAfter`.
///
/// All sessions are checked by one daemon-wide tick (`sweep`): every session due in that
/// tick is pinged in the same wake-up, so the daemon wakes `1 / tickInterval` times a
/// second however many sessions it holds (issue 21: ≤ 2 wake-ups/s with 1,000 sessions).
public struct KeepalivePolicy: Sendable, Equatable {
    public enum Verdict: Sendable, Equatable {
        case healthy
        /// Send a ping now.
        case ping
        /// A ping went unanswered for `deadAfter`: drop the connection.
        case dead
    }

    /// Ping a session from which nothing arrived for this long, and again every interval
    /// while the silence lasts.
    public var pingInterval: Duration
    /// How long a ping may stay unanswered (nothing at all received since it was sent)
    /// before the session is dead. Also the kernel keepalive's bound (`KernelKeepalive`).
    public var deadAfter: Duration

    /// Ten minutes: with 1,000 sessions, pings the peers start themselves arrive at most
    /// 1,000 / 600 s ≈ 1.7 times a second (each wakes us; ours are batched). A cut link
    /// does not wait for it: the kernel keepalive reports it within `deadAfter`.
    public static let defaultPingInterval: Duration = .seconds(600)
    /// Three kernel probe intervals of 5 s: one lost probe does not drop a session.
    public static let defaultDeadAfter: Duration = .seconds(15)
    /// The tick never sleeps longer than this, because it also resends what a send
    /// window's ack timeout (30 s) gave up on: at most a sixth late. 5 s is 0.2 wake-ups/s.
    public static let longestTick: Duration = .seconds(5)
    /// Nor more often than this, whatever tests configure.
    public static let shortestTick: Duration = .milliseconds(100)

    public init(pingInterval: Duration = Self.defaultPingInterval, deadAfter: Duration = Self.defaultDeadAfter) {
        self.pingInterval = pingInterval
        self.deadAfter = deadAfter
    }

    /// How often the driver runs `sweep`: a third of the shorter interval, so a ping or a
    /// death is at most a third of its interval late, within [100 ms, 5 s].
    public var tickInterval: Duration {
        min(max(min(pingInterval, deadAfter) / 3, Self.shortestTick), Self.longestTick)
    }

    /// What the tick knows about one session.
    public struct SessionLiveness: Sendable, Equatable {
        /// When anything (any record, any byte) last arrived from the peer.
        public var lastReceived: MonotonicInstant
        /// When the tick last pinged this session (nil: never).
        public var lastPing: MonotonicInstant?
        /// The first ping sent after `lastReceived` (nil, or not later than `lastReceived`:
        /// no ping is waiting for its answer).
        public var unansweredSince: MonotonicInstant?

        public init(
            lastReceived: MonotonicInstant, lastPing: MonotonicInstant? = nil, unansweredSince: MonotonicInstant? = nil
        ) {
            self.lastReceived = lastReceived
            self.lastPing = lastPing
            self.unansweredSince = unansweredSince
        }

        /// The bookkeeping after a ping sent at `now`: the first unanswered ping keeps its time.
        public mutating func pinged(at now: MonotonicInstant) {
            if unansweredSince.map({ $0 <= lastReceived }) ?? true { unansweredSince = now }
            lastPing = now
        }
    }

    public func check(_ s: SessionLiveness, now: MonotonicInstant) -> Verdict {
        // A ping goes out only after a silence, so it is always later than the last receipt;
        // anything received at or after it answers it.
        if let since = s.unansweredSince, since > s.lastReceived, now - since > deadAfter { return .dead }
        // One ping per interval while the peer is silent, not one per tick.
        let pingedRecently = s.lastPing.map { now - $0 < pingInterval } ?? false
        if now - s.lastReceived >= pingInterval && !pingedRecently { return .ping }
        return .healthy
    }

    /// One tick over every session: who gets a ping in this wake-up, who is dead.
    public func sweep<Handle>(_ sessions: [(Handle, SessionLiveness)], now: MonotonicInstant) -> Sweep<Handle> {
        var result = Sweep<Handle>()
        for (handle, liveness) in sessions {
            switch check(liveness, now: now) {
            case .healthy: break
            case .ping: result.ping.append(handle)
            case .dead: result.dead.append(handle)
            }
        }
        return result
    }

    public struct Sweep<Handle> {
        public var ping: [Handle] = []
        public var dead: [Handle] = []
        public init() {}
    }
}
