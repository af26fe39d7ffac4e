import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the local user asks of the node through the control socket (besides sending,
/// in Node+Outbox.swift, and rooms, in Node+Rooms.swift).
extension Node {
    /// Finds a peer by display name, fingerprint prefix or identity hex.
    func resolvePeer(_ query: String) throws(NodeError) -> PeerRecord {
        let all: [PeerRecord]
        do { all = try allPeers() } catch { throw .storage(error) }
        let live = all.filter { $0.replacedBy == nil }
        if let exact = live.first(where: { $0.identity == query.lowercased() }) { return exact }
        let byName = live.filter { $0.displayName == query }
        if byName.count == 1 { return byName[0] }
        if byName.count > 1 { throw .peerAmbiguous(query, byName) }
        let byNameCI = live.filter { $0.displayName.lowercased() == query.lowercased() }
        if byNameCI.count == 1 { return byNameCI[0] }
        if byNameCI.count > 1 { throw .peerAmbiguous(query, byNameCI) }
        let byPrefix = live.filter { rec in
            IdentityPublicKey(hex: rec.identity).map { Fingerprint($0).matches(prefix: query) } ?? false
        }
        if byPrefix.count == 1 { return byPrefix[0] }
        if byPrefix.count > 1 { throw .peerAmbiguous(query, byPrefix) }
        throw .peerNotFound(query)
    }

    /// Marks a peer verified after a person compared fingerprints.
    func verify(_ peer: PeerRecord, fingerprint given: String) throws(NodeError) -> PeerRecord {
        let expected = Node.fingerprint(ofHex: peer.identity)
        guard let g = Fingerprint.normalize(given), let e = Fingerprint.normalize(expected), g == e else {
            throw .fingerprintMismatch(expected: expected, given: given)
        }
        do {
            try setTrust(identity: peer.identity, .verified)
            return try store.peer(identity: peer.identity) ?? peer
        } catch { throw .storage(error) }
    }

    /// A person accepted a key change: pin the new identity, move queued messages to it.
    func acceptKeyChange(_ peer: PeerRecord) throws(NodeError) -> (PeerRecord, Int) {
        let change: KeyChangeRecord
        do {
            let changes = try store.pendingKeyChanges().filter {
                $0.oldIdentity == peer.identity || $0.newIdentity == peer.identity
            }
            guard let last = changes.last else { throw NodeError.noPendingKeyChange(peer.displayName) }
            change = last
        } catch let e as NodeError {
            throw e
        } catch let e as StoreError {
            throw .storage(e)
        } catch {
            throw .storage(.io(path: store.path, reason: "\(error)"))
        }
        let newCard: Card
        do { newCard = try Card.decode(change.newCard) } catch {
            // Only verified cards are recorded: a damaged row, not an attack.
            throw .storedCardUnreadable(peer.displayName, "\(error)")
        }
        let now = nowMs
        let rec = PeerRecord(identity: change.newIdentity, displayName: newCard.displayName, hostName: newCard.hostName,
                             card: change.newCard, cardSequence: Int64(clamping: newCard.sequence),
                             noiseKey: newCard.noiseKey.hex, trust: .pinned, firstSeen: now, lastSeen: now,
                             lastAddress: change.address, replacedBy: nil)
        peerCache = nil
        let moved: Int
        do { moved = try store.acceptKeyChange(id: change.id, newPeer: rec, at: now) } catch { throw .storage(error) }
        outbox.forgetAll()  // messages moved to another recipient: count and query again
        log.warning("key change accepted by a person", ["name": newCard.displayName, "new": newCard.fingerprint.description])
        // Reconnect now rather than waiting for backoff.
        if let old = IdentityPublicKey(hex: change.oldIdentity), let new = IdentityPublicKey(hex: change.newIdentity) {
            perform(dialPlanner.redirect(from: old, to: new, sessions: sessionView))
        }
        return (rec, moved)
    }
}
