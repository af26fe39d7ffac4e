import ParleyCore
import ParleyNodeCore

/// What the node keeps about one open connection. Nothing the node decides lives on the
/// connection handler itself: the handler does I/O, the node owns this.
struct NodeLink {
    let connection: PeerConnection
    /// The dial target this connection was opened for (outbound connections only).
    let dialTarget: DialTargetKey?
    /// For connections dialled from an mDNS advertisement: the compact fingerprint it claimed.
    let expectedFingerprint: String?
    /// An inbound connection holds an admission slot until its handshake ends.
    var holdsAdmission: Bool
    /// The send window of the session this connection carries, once it is kept.
    var window: SendWindow
    /// When the keepalive tick last pinged on this connection, and the first of its pings
    /// still unanswered (`KeepalivePolicy.SessionLiveness`; the time of the last receipt
    /// is the connection's own).
    var lastPingSent: MonotonicInstant? = nil
    var unansweredPingSince: MonotonicInstant? = nil
}

extension NodeLink {
    /// What the keepalive tick decides on (`KeepalivePolicy.check`).
    var liveness: KeepalivePolicy.SessionLiveness {
        KeepalivePolicy.SessionLiveness(
            lastReceived: MonotonicInstant(connection.lastReceived), lastPing: lastPingSent,
            unansweredSince: unansweredPingSince)
    }

    /// Records a ping sent now (the first unanswered one keeps its time).
    mutating func pinged(at now: MonotonicInstant) {
        var next = liveness
        next.pinged(at: now)
        lastPingSent = next.lastPing
        unansweredPingSince = next.unansweredSince
    }
}
