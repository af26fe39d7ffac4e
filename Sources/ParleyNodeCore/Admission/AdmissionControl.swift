/// Limits on what peers can make this node hold. Every value says why.
public enum NodeLimits {
    /// Connections still in the handshake, all sources together. A handshake costs
    /// two X25519 operations and a few hundred bytes; 256 of them is nothing for
    /// us and far more than honest peers ever have at once.
    public static let maxUnauthenticatedConnections = 256
    /// Connections still in the handshake from one IP address. An honest node has
    /// at most one or two (a simultaneous dial); 8 leaves room for a NAT'ed host.
    public static let maxUnauthenticatedPerSource = 8
    /// New TCP connections accepted per source address per second (sustained), and
    /// the burst allowed. A restarting peer reconnects once; a flood is refused.
    public static let connectionsPerSourcePerSecond = 5.0
    public static let connectionBurstPerSource = 20.0
    /// Sources whose rate we remember; the oldest is forgotten beyond this, so a
    /// spoofed-address flood cannot grow the table without bound.
    public static let trackedSources = 4_096
    /// Established sessions in total (a LAN office is tens to hundreds of nodes).
    public static let maxSessions = 1_024
    /// Queued (undelivered) messages per recipient. A peer that never comes back
    /// cannot fill the disk through one local client's loop; `send` reports it.
    public static let maxQueuedPerPeer = 100_000
    /// Queued edits, deletes and reactions per peer or room, for the same reason: a peer
    /// that never comes back (or never announces the feature) keeps them queued.
    public static let maxQueuedActionsPerPeer = 100_000
}

/// Decides whether to accept a new inbound TCP connection, before any byte is read: a
/// token bucket per source address, and caps on connections still in their handshake.
/// Pure bookkeeping with time passed in (tested in `AdmissionControlTests`).
public struct AdmissionControl: Sendable {
    public enum Verdict: Equatable, Sendable {
        case accept
        case refuseTooManyHandshakes
        case refuseTooManyFromSource
        case refuseRate
    }

    private struct Bucket {
        var tokens: Double
        var last: MonotonicInstant
    }

    private var buckets: [String: Bucket] = [:]
    private var order: [String] = []  // insertion order, for bounded forgetting
    public private(set) var handshaking: [String: Int] = [:]
    public private(set) var handshakingTotal = 0

    public init() {}

    /// Sources whose rate is remembered now (at most `NodeLimits.trackedSources`).
    public var trackedSourceCount: Int { buckets.count }

    public mutating func admit(source: String, now: MonotonicInstant) -> Verdict {
        // Rate first: a refused connection still spends a token, so a flood stays refused.
        var b = buckets[source] ?? Bucket(tokens: NodeLimits.connectionBurstPerSource, last: now)
        if buckets[source] == nil {
            order.append(source)
            if order.count > NodeLimits.trackedSources {
                let old = order.removeFirst()
                buckets[old] = nil
            }
        }
        let elapsed = Double((now - b.last).wholeNanoseconds) / 1e9
        b.tokens = min(
            NodeLimits.connectionBurstPerSource,
            b.tokens + max(0, elapsed) * NodeLimits.connectionsPerSourcePerSecond)
        b.last = now
        defer { buckets[source] = b }
        guard b.tokens >= 1 else { return .refuseRate }
        b.tokens -= 1
        guard handshakingTotal < NodeLimits.maxUnauthenticatedConnections else { return .refuseTooManyHandshakes }
        guard handshaking[source, default: 0] < NodeLimits.maxUnauthenticatedPerSource else {
            return .refuseTooManyFromSource
        }
        handshaking[source, default: 0] += 1
        handshakingTotal += 1
        return .accept
    }

    /// The connection finished its handshake or closed before it.
    public mutating func handshakeEnded(source: String) {
        guard let n = handshaking[source] else { return }
        handshakingTotal -= 1
        if n <= 1 { handshaking[source] = nil } else { handshaking[source] = n - 1 }
    }
}
