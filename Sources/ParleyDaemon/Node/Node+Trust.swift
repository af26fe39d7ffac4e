import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Trust on first use: routed to `TrustDriver`, which asks `TrustDecision` what a verified
/// card means and records what it says. A peer is its key: a name never makes a new key
/// stand for a known peer. docs/PROTOCOL.md, "Trust".
extension Node {
    /// The handshake's trust outcome (`TrustAdmission`): kept, or closed with a reason.
    typealias TrustOutcome = TrustAdmission

    func admitTrust(of remote: Card, connection conn: PeerConnection, dialTarget: DialTargetKey?) -> TrustOutcome {
        trustDriver.admit(remote, dialTarget: dialTarget, remoteAddress: conn.remoteAddress)
    }

    // MARK: Names

    /// Which live peers' labels (nickname, or self-asserted name) look alike, or like ours.
    /// Cached until a peer record is written (`PeerDirectory`).
    func nameClashes() -> [IdentityPublicKey: NameClashes.Clash] { peerDirectory.nameClashes() }

    func nameClash(of identity: IdentityPublicKey) -> NameClashes.Clash? { nameClashes()[identity] }

    // MARK: Card updates on a live session

    func connection(_ conn: PeerConnection, receivedCard bytes: [UInt8]) {
        trustDriver.received(card: bytes, on: conn)
    }
}

// MARK: The host of the trust driver

extension Node: TrustHost {
    func closeSession(of peer: IdentityPublicKey, reason: CloseReason, text: String) {
        activeConnection(for: peer)?.close(reason: reason, text: text)
    }

    func redialNow(_ peer: IdentityPublicKey) {
        for target in dialDriver.planner.targets(of: peer) {
            perform(dialDriver.planner.dial(target, sessions: sessionView))
        }
    }

    func keyReplaced(old: IdentityPublicKey, new: IdentityPublicKey) {
        perform(dialDriver.planner.redirect(from: old, to: new, sessions: sessionView))
        if let conn = activeConnection(for: new) { pump(conn) }
    }

    func outboxChanged() { directMessages.outboxChanged() }
}
