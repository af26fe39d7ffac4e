import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the local user asks of the node through the control socket (besides sending,
/// in Node+Outbox.swift, and rooms, in Node+Rooms.swift).
extension Node {
    /// Finds a peer by nickname, display name, fingerprint prefix or identity hex. Replaced
    /// keys are not found (their contact is the new key). A name two live peers share is
    /// ambiguous: the error lists both, with fingerprints and trust, and never picks one.
    /// The order is `PeerNameResolution`'s.
    func resolvePeer(_ query: String) throws(NodeError) -> PeerRecord { try peerDirectory.resolve(query) }

    /// For reading history: a live key as `resolvePeer` finds it, or else a replaced key
    /// named by its whole fingerprint (`TrustDriver.resolveIncludingReplaced`).
    func resolvePeerIncludingReplaced(_ query: String) throws(NodeError) -> PeerRecord {
        try trustDriver.resolveIncludingReplaced(query)
    }

    // MARK: Trust (`TrustDriver`, Drivers/Trust/TrustDriver+LocalAPI.swift)

    func verify(_ peer: PeerRecord, fingerprint given: String) throws(NodeError) -> PeerRecord {
        try trustDriver.verify(peer, fingerprint: given)
    }

    func replaceKey(
        of old: PeerRecord, newFingerprint given: String, safetyNumber typed: String? = nil
    ) throws(NodeError) -> (PeerRecord, Int) {
        try trustDriver.replaceKey(of: old, newFingerprint: given, safetyNumber: typed)
    }

    func accept(_ peer: PeerRecord) throws(NodeError) -> PeerRecord { try trustDriver.accept(peer) }

    func block(_ peer: PeerRecord) throws(NodeError) -> PeerRecord { try trustDriver.block(peer) }

    func unblock(_ peer: PeerRecord) throws(NodeError) -> PeerRecord { try trustDriver.unblock(peer) }

    @discardableResult
    func forget(_ peer: PeerRecord) throws(NodeError) -> [PeerRecord] { try trustDriver.forget(peer) }

    /// Deletes the direct conversation with `peer` (`messages.forget`): its messages no
    /// longer count against the receive quota, so what it sends is taken again.
    func forgetMessages(with peer: PeerRecord) throws(NodeError) -> Int {
        let deleted: Int
        do { deleted = try store.deleteConversation(with: peer.identity) } catch { throw .storage(error) }
        messageDriver.quota.countsChanged()
        // The outbox counts (queued messages per peer) are re-read from the store.
        directMessages.outboxChanged()
        if let conn = activeConnection(for: peer.identity) {
            // Queued messages that were in flight are gone: start the window afresh (what
            // is still owed, room traffic, is sent again and de-duplicated by the peer).
            sessionDriver.links[ObjectIdentifier(conn)]?.window = SendWindow(limits: options.window)
        }
        return deleted
    }

    func setNickname(_ peer: PeerRecord, _ nickname: String?) throws(NodeError) -> PeerRecord {
        try trustDriver.setNickname(peer, nickname)
    }

    func previousKeys(of peer: PeerRecord) throws(NodeError) -> [PeerRecord] { try trustDriver.previousKeys(of: peer) }
}

extension Node {
    /// Why nothing may be sent to `peer` now, if anything forbids it.
    func sendRefusal(_ peer: PeerRecord) -> NodeError? { peer.sendRefusal }
}

extension PeerRecord {
    /// Why nothing may be sent to this peer now, if anything forbids it: replaced first,
    /// then blocked, then awaiting approval.
    var sendRefusal: NodeError? {
        if let by = replacedBy { return .peerReplaced(self, by: by) }
        switch trust {
        case .blocked: return .peerBlocked(self)
        case .pending: return .peerAwaitingApproval(self)
        case .pinned, .verified: return nil
        }
    }
}
