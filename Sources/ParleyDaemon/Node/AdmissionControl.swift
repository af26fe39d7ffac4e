import NIOCore

/// Limits on what a stranger on the LAN can make us hold before it has proven
/// anything. Every value says why.
public enum DaemonLimits {
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
}

/// Decides whether to accept a new inbound TCP connection. Pure bookkeeping with
/// time passed in, so it is unit-tested without sockets.
struct AdmissionControl {
    enum Verdict: Equatable {
        case accept
        case refuseTooManyHandshakes
        case refuseTooManyFromSource
        case refuseRate
    }

    private struct Bucket {
        var tokens: Double
        var last: NIODeadline
    }

    private var buckets: [String: Bucket] = [:]
    private var order: [String] = []  // insertion order, for bounded forgetting
    private(set) var handshaking: [String: Int] = [:]
    private(set) var handshakingTotal = 0

    mutating func admit(source: String, now: NIODeadline) -> Verdict {
        // Rate first: a refused connection still spends a token, so a flood stays refused.
        var b = buckets[source] ?? Bucket(tokens: DaemonLimits.connectionBurstPerSource, last: now)
        if buckets[source] == nil {
            order.append(source)
            if order.count > DaemonLimits.trackedSources {
                let old = order.removeFirst()
                buckets[old] = nil
            }
        }
        let elapsed = Double((now - b.last).nanoseconds) / 1e9
        b.tokens = min(DaemonLimits.connectionBurstPerSource, b.tokens + max(0, elapsed) * DaemonLimits.connectionsPerSourcePerSecond)
        b.last = now
        defer { buckets[source] = b }
        guard b.tokens >= 1 else { return .refuseRate }
        b.tokens -= 1
        guard handshakingTotal < DaemonLimits.maxUnauthenticatedConnections else { return .refuseTooManyHandshakes }
        guard handshaking[source, default: 0] < DaemonLimits.maxUnauthenticatedPerSource else { return .refuseTooManyFromSource }
        handshaking[source, default: 0] += 1
        handshakingTotal += 1
        return .accept
    }

    /// The connection finished its handshake or closed before it.
    mutating func handshakeEnded(source: String) {
        guard let n = handshaking[source] else { return }
        handshakingTotal -= 1
        if n <= 1 { handshaking[source] = nil } else { handshaking[source] = n - 1 }
    }
}
