import ParleyCore
import ParleyNodeCore

/// The node's view of its drivers' state, under the names the node's extensions used
/// before the state moved into the drivers (so the move does not touch every caller).
/// Each forwards to the one owner; nothing is stored here.
extension Node {
    /// The session table (`SessionDriver`).
    var sessions: SessionTable<ObjectIdentifier> {
        _read { yield sessionDriver.table }
        _modify { yield &sessionDriver.table }
    }

    /// Every open connection (`SessionDriver`).
    var links: [ObjectIdentifier: NodeLink] {
        _read { yield sessionDriver.links }
        _modify { yield &sessionDriver.links }
    }

    /// Each online peer's latest status line (`SessionDriver`).
    var peerStatuses: [IdentityPublicKey: PresenceStatus] { sessionDriver.statuses }
}
