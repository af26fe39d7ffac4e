/// Limits on what peers can make this node hold. Every value says why.
public enum NodeLimits {
    /// Connections still in the handshake, all sources together. A handshake costs
    /// two X25519 operations and a few hundred bytes; 256 of them is nothing for
    /// us and far more than honest peers ever have at once.
    public static let maxUnauthenticatedConnections = 256
    /// Connections still in the handshake from one IP address. An honest node has
    /// at most one or two (a simultaneous dial); 8 leaves room for a NAT'ed host.
    public static let maxUnauthenticatedPerSource = 8
    /// Connections still in the handshake from one IPv6 /64: a host picks any address in
    /// its /64, so the per-address cap alone bounds nothing. 32 leaves a whole LAN segment
    /// sharing a /64 room to reconnect at once after a restart.
    public static let maxUnauthenticatedPerNetwork = 32
    /// New TCP connections accepted per source address per second (sustained), and
    /// the burst allowed. A restarting peer reconnects once; a flood is refused.
    public static let connectionsPerSourcePerSecond = 5.0
    public static let connectionBurstPerSource = 20.0
    /// Sources whose rate we remember; the oldest is forgotten beyond this, so a
    /// spoofed-address flood cannot grow the table without bound.
    public static let trackedSources = 4_096
    /// Established sessions in total (a LAN office is tens to hundreds of nodes).
    public static let maxSessions = 1_024
    /// Established sessions from one address: an honest host is one node (a few behind a
    /// NAT or in containers). Beyond this a source is minting identities.
    public static let maxSessionsPerAddress = 16
    /// Established sessions from one IPv6 /64 (a LAN segment may share one): a quarter of
    /// the table, so one network can never take every slot.
    public static let maxSessionsPerNetwork = 256
    /// A key pinned on first use (or held) that never exchanged a message is forgotten
    /// after it has not been seen for this long: a day covers a laptop that sleeps
    /// overnight, and fresh keys minted by the thousand do not stay pinned forever.
    public static let unusedIdentityLifetime: Duration = .seconds(24 * 3600)
    /// Advertisements (mDNS instances) kept as dial targets at once. Known peers first:
    /// beyond this, one naming a known peer replaces the oldest unknown one.
    public static let maxDiscoveredTargets = 256
    /// Dials of an advertised address whose owner we do not know: 3 at once, then one per
    /// 30 s per host (issue 15: a fake advert drew 15 connections in 40 s from each node).
    public static let advertisedDialBurst = 3
    public static let advertisedDialInterval: Duration = .seconds(30)
    /// How often the node looks for such keys.
    public static let unusedIdentityCheckInterval: Duration = .seconds(3600)
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
        /// Too many handshakes from the source's IPv6 /64.
        case refuseTooManyFromNetwork
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
    /// Handshakes per IPv6 /64 (IPv4 sources count under their own address).
    public private(set) var handshakingPerNetwork: [String: Int] = [:]

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
        let network = SourceAddress.network(of: source)
        guard handshakingPerNetwork[network, default: 0] < NodeLimits.maxUnauthenticatedPerNetwork else {
            return .refuseTooManyFromNetwork
        }
        handshaking[source, default: 0] += 1
        handshakingPerNetwork[network, default: 0] += 1
        handshakingTotal += 1
        return .accept
    }

    /// The connection finished its handshake or closed before it.
    public mutating func handshakeEnded(source: String) {
        guard let n = handshaking[source] else { return }
        handshakingTotal -= 1
        if n <= 1 { handshaking[source] = nil } else { handshaking[source] = n - 1 }
        let network = SourceAddress.network(of: source)
        if let m = handshakingPerNetwork[network] {
            if m <= 1 { handshakingPerNetwork[network] = nil } else { handshakingPerNetwork[network] = m - 1 }
        }
    }
}
