import ParleyCore
import ParleyNodeCore

/// What the sessions driver needs from the rest of the node: the trust decision, and the
/// other drivers' steps when a session starts or ends. `Node` is the host
/// (Node+Sessions.swift), which only routes each call; a test stands in for it.
protocol SessionHost: AnyObject {
    /// The trust decision on the peer's verified card (pin, hold, refuse; it may write the
    /// store). nil keeps the connection; otherwise the close reason and text the peer sees.
    func judgeTrust(of card: Card, connection: PeerConnection, dialTarget: DialTargetKey?)
        -> (reason: CloseReason, text: String)?
    /// The TCP ports this node listens on, announced on every new session.
    var listenPorts: [UInt16] { get }
    /// `conn` now carries `peer`'s session and the peer is announced online: our status,
    /// gossip, the pumps, read receipts, files and room sync start on it.
    func sessionStarted(_ conn: PeerConnection, peer: IdentityPublicKey)
    /// The session on `conn` is closing (before its link is forgotten): files stop using it.
    func sessionClosing(_ conn: PeerConnection)
    /// `peer`'s session ended: gossip, room sync and rooms forget what was per session.
    func sessionEnded(_ peer: IdentityPublicKey)
    /// Sends what the session's window admits now (the ack-timeout resend).
    func pump(_ conn: PeerConnection)
    /// Co-members of joined rooms: their keys are kept however long they are away.
    func coMembers() -> Set<IdentityPublicKey>
}
