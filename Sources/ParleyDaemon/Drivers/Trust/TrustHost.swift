import ParleyCore
import ParleyNodeCore
import ParleyStore

/// One session's connection as the trust driver sees it (a card update arrives on it):
/// `PeerConnection` in the daemon, a link that records its closing in the driver's tests.
protocol TrustLink: AnyObject {
    /// The identity the handshake proved.
    var remoteIdentityKey: IdentityPublicKey? { get }
    var remoteAddress: String { get }
    func close(reason: CloseReason, text: String)
}

extension PeerConnection: TrustLink {}

/// What the trust driver needs from the rest of the node: the sessions it ends, the dialling
/// it starts, stops or redirects, the outbox it tells, and the way out to the control side
/// and the security log. `Node` is the host (Node+Trust.swift); a test stands in for it
/// (`TrustDriverTests`).
protocol TrustHost: AnyObject {
    /// Tells the observers (the control side).
    func emit(_ e: NodeEvent)
    /// What a hostile or broken peer can cause, logged once per key per interval.
    func logAttack(key: String, _ message: String, _ fields: [String: String])

    // Sessions and dialling (`SessionDriver`, `DialDriver`).
    /// Ends `peer`'s session, if it has one.
    func closeSession(of peer: IdentityPublicKey, reason: CloseReason, text: String)
    /// Dials every target that reached `peer` now, rather than after its backoff.
    func redialNow(_ peer: IdentityPublicKey)
    /// Stops dialling `peer`'s remembered addresses and gossiping about it.
    func stopDialingRemembered(_ peer: IdentityPublicKey)
    /// `peer` can be reached at these "host:port" addresses: remember and dial them.
    func rememberAddresses(of peer: IdentityPublicKey, _ addresses: [String])
    /// A person replaced `old` with `new`: what dialled the old key dials the new one, and
    /// the new key's session (if any) sends what moved to it.
    func keyReplaced(old: IdentityPublicKey, new: IdentityPublicKey)

    /// Queued messages changed recipients: the outbox's counts are read again.
    func outboxChanged()
}
