import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// Peers and trust: `peers.connect`, `peers.nickname` and the `trust.*` methods. Every
/// peer is named as the person typed it and found by `PeerDirectory`'s resolution.
extension ControlDispatcher {
    func peersConnect(_ p: PeersConnectParams, id: JSONRPCID?) throws -> Reply {
        let key = try node.connect(address: p.address)
        if p.effectiveWait { return awaitDial(key, address: p.address, timeoutMs: p.effectiveTimeoutMs, id: id) }
        return .typed(id: id, result: PeersConnectResult(address: p.address, status: .dialing))
    }

    func peersNickname(_ p: PeersNicknameParams, id: JSONRPCID?) throws -> Reply {
        let peer = try node.resolvePeer(p.peer)
        return .typed(id: id, result: TrustPeerResult(peer: node.peerInfo(try node.setNickname(peer, p.nickname))))
    }

    func trustVerify(_ p: TrustVerifyParams, id: JSONRPCID?) throws -> Reply {
        let peer = try node.resolvePeer(p.peer)
        let updated = try node.verify(peer, fingerprint: p.fingerprint)
        return .typed(id: id, result: TrustVerifyResult(peer: node.peerInfo(updated)))
    }

    func trustReplace(_ p: TrustReplaceParams, id: JSONRPCID?) throws -> Reply {
        let old = try node.resolvePeer(p.peer)
        let (rec, moved) = try node.replaceKey(of: old, newFingerprint: p.newFingerprint, safetyNumber: p.safetyNumber)
        return .typed(id: id, result: TrustReplaceResult(peer: node.peerInfo(rec), retargeted: moved))
    }

    /// `trust.accept`, `trust.block`, `trust.unblock`: one change to the named peer.
    func trustChange(
        _ selector: String, id: JSONRPCID?, _ change: (PeerRecord) throws(NodeError) -> PeerRecord
    ) throws -> Reply {
        .typed(id: id, result: TrustPeerResult(peer: node.peerInfo(try change(try node.resolvePeer(selector)))))
    }

    func trustForget(_ p: TrustForgetParams, id: JSONRPCID?) throws -> Reply {
        let peer = try node.resolvePeer(p.peer)
        let blocked = try node.forget(peer)
        return .typed(
            id: id,
            result: TrustForgetResult(
                fingerprint: Node.fingerprint(of: peer.identity), blocked: blocked.map { node.peerInfo($0) }))
    }
}
