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
    /// When the keepalive tick last pinged on this connection (`KeepalivePolicy`: one
    /// ping per interval while the peer is silent).
    var lastPingSent: MonotonicInstant? = nil
}
