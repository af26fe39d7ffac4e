import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// Turns the node's records into the control protocol's wire types.
extension Node {
    func displayName(of identity: String) -> String {
        if identity == myIdentity { return card.displayName }
        return peerRecord(identity)?.displayName ?? String(Node.fingerprint(ofHex: identity).prefix(9))
    }

    func messageInfo(_ m: StoredMessage) -> MessageInfo {
        withRoom(MessageInfo(id: m.id,
                    from: Node.fingerprint(ofHex: m.sender), fromName: displayName(of: m.sender),
                    to: Node.fingerprint(ofHex: m.recipient), toName: displayName(of: m.recipient),
                    direction: m.direction == .incoming ? .incoming : .outgoing,
                    sequence: Int(m.sequence), createdAt: Int(m.createdAt), body: m.body,
                    state: ParleyControlProtocol.MessageState(rawValue: m.state.rawValue) ?? .queued,
                    deliveredAt: m.deliveredAt.map { Int($0) }, cursor: Int(m.rowID),
                    readAt: m.readAt.map { Int($0) }), m)
    }

    func safetyNumber(with identity: String) -> String {
        guard let b = Sodium.fromHex(identity), let k = try? IdentityPublicKey(bytes: b) else { return "" }
        return SafetyNumber.compute(keys.identity.publicKey, k)
    }

    func peerInfo(_ rec: PeerRecord, queued: [String: Int]? = nil, changes: [KeyChangeRecord]? = nil,
                  unread: [String: Int]? = nil) -> PeerInfo {
        let q = queued ?? ((try? store.pendingRecipients()) ?? [:])
        let u = unread ?? ((try? store.unreadCounts()) ?? [:])
        let pending = changes ?? ((try? store.pendingKeyChanges()) ?? [])
        let change = pending.last { $0.oldIdentity == rec.identity }
        let trust: PeerTrust
        switch rec.trust {
        case .pinned: trust = .pinned
        case .verified: trust = .verified
        case .changed: trust = .changed
        case .blocked: trust = .blocked
        }
        return PeerInfo(name: rec.displayName, host: rec.hostName,
                        fingerprint: Node.fingerprint(ofHex: rec.identity), identityKey: rec.identity,
                        online: isOnline(rec.identity), addresses: addresses(of: rec.identity),
                        trust: trust, safetyNumber: safetyNumber(with: rec.identity),
                        lastSeen: Int(rec.lastSeen), queued: q[rec.identity] ?? 0,
                        keyChange: change.map { KeyChangeInfo(newFingerprint: Node.fingerprint(ofHex: $0.newIdentity),
                                                              detectedAt: Int($0.detectedAt)) },
                        unread: u[rec.identity] ?? 0)
    }

    func peerInfos() throws(ControlFailure) -> [PeerInfo] {
        do {
            let q = try store.pendingRecipients()
            let changes = try store.pendingKeyChanges()
            let unread = try store.unreadCounts()
            return try store.peers().filter { $0.replacedBy == nil }.map {
                peerInfo($0, queued: q, changes: changes, unread: unread)
            }
        } catch { throw .storeRead(what: "the peers", error) }
    }
}
