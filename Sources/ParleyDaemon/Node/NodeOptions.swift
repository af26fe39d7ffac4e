import NIOCore
import ParleyNodeCore

/// The part of the daemon's configuration the node itself needs: a plain value.
struct NodeOptions: Sendable {
    /// How long a handshake may take before the connection is dropped.
    var handshakeTimeout: TimeAmount = .seconds(5)
    /// Ping a session after this much silence from the peer (`KeepalivePolicy`).
    var pingInterval: TimeAmount = KeepalivePolicy.defaultPingInterval.timeAmount
    /// A ping unanswered for this long ends the session; also the kernel keepalive's
    /// bound for a cut link (`KernelKeepalive`, `SessionSocketOptions`).
    var deadAfter: TimeAmount = KeepalivePolicy.defaultDeadAfter.timeAmount
    /// The send window of each session (count, bytes, ack timeout); see `SendWindowLimits`.
    var window = SendWindowLimits()
    /// What to do with identities never seen before (`new_identities`).
    var newIdentities: TrustDecision.NewIdentityPolicy = .accept
    /// Reconnect backoff for static and discovered peers.
    var redial = RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30))
    /// What the node keeps from peers, and its disk floor (`quota_*`, `disk_floor_mib`).
    var quota = ReceiveQuota.standard
    /// Where received files go (`download_dir`); nil: `<state-dir>/files`.
    var downloadDirectory: String?
    /// Offers taken without asking (`file_auto_accept_mib`, from verified peers only).
    var fileAutoAcceptBytes = FileAcceptPolicy.defaultAutoAcceptBytes
    /// Files up to this size are hashed on the event loop when offered, larger ones on NIO's
    /// thread pool (1 GiB takes about a second, which must not stall chat). The in-process
    /// tests raise it: their embedded loop has no thread to come back from.
    var fileInlineDigestBytes: UInt64 = 4 << 20
    /// Run a receiver's disk work (writes, whole-file hash, syncs, the rename) at once on
    /// the event loop's thread instead of a queue of its own: for unit tests on an
    /// EmbeddedEventLoop.
    var fileDiskWorkInline = false
    /// Established sessions in total (`max_sessions`).
    var maxSessions = NodeLimits.maxSessions
    /// How long a key that never exchanged a message is kept after it was last seen
    /// (`unused_identity_lifetime_s`).
    var unusedIdentityLifetime = NodeLimits.unusedIdentityLifetime

    /// How often the node looks for such keys: hourly, or more often for a shorter
    /// lifetime, so a key is forgotten at most half a lifetime late.
    var unusedIdentityCheckInterval: Duration {
        min(NodeLimits.unusedIdentityCheckInterval, unusedIdentityLifetime / 2)
    }

    var keepalive: KeepalivePolicy {
        KeepalivePolicy(pingInterval: pingInterval.duration, deadAfter: deadAfter.duration)
    }
}
