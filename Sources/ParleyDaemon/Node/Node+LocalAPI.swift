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
    /// named by its whole fingerprint (a contact's previous key, as `trust.show` lists
    /// it), whose messages stay readable after `trust.replace`.
    func resolvePeerIncludingReplaced(_ query: String) throws(NodeError) -> PeerRecord {
        do {
            return try resolvePeer(query)
        } catch {
            guard case .peerNotFound = error, let whole = Fingerprint.normalize(query) else { throw error }
            let all: [PeerRecord]
            do { all = try allPeers() } catch { throw .storage(error) }
            guard
                let previous = all.first(where: {
                    $0.replacedBy != nil && Fingerprint.normalize(Node.fingerprint(of: $0.identity)) == whole
                })
            else { throw error }
            return previous
        }
    }

    /// The whole fingerprint `given` names, or why it cannot: a prefix is not enough where
    /// a person vouches for a key (verify, replace), since another key could share it.
    private func requireWholeFingerprint(_ given: String, of expected: String? = nil) throws(NodeError) -> String {
        guard let g = Fingerprint.normalize(given) else {
            throw .fingerprintMismatch(expected: expected ?? "?", given: given)
        }
        let wholeLength = Fingerprint.normalize(ownIdentity.card.fingerprint.description)?.count ?? 32
        if g.count < wholeLength {
            if let expected, let e = Fingerprint.normalize(expected), !e.hasPrefix(g) {
                throw .fingerprintMismatch(expected: expected, given: given)
            }
            throw .fingerprintTooShort(given: given, needed: wholeLength)
        }
        return g
    }

    /// Marks a peer verified after a person compared fingerprints.
    func verify(_ peer: PeerRecord, fingerprint given: String) throws(NodeError) -> PeerRecord {
        let expected = Node.fingerprint(of: peer.identity)
        let g = try requireWholeFingerprint(given, of: expected)
        guard g == Fingerprint.normalize(expected) else { throw .fingerprintMismatch(expected: expected, given: given) }
        return try setTrustAndReload(peer, .verified)
    }

    /// A person replaced a contact's key (the contact reinstalled): they name the old
    /// contact and the whole new fingerprint, after comparing the safety number computed
    /// with the new key (`trust show NEW`). The new key must have connected once (so its
    /// card is known). Queued messages move to it; the old key is marked replaced.
    /// `safetyNumber`, when given, is what the person read from the other device: nothing
    /// changes unless it is the one computed with the new key (its digits; separators
    /// ignored), so the ceremony is checked here, not only by the client that asked.
    func replaceKey(
        of old: PeerRecord, newFingerprint given: String, safetyNumber typed: String? = nil
    ) throws(NodeError) -> (PeerRecord, Int) {
        let g = try requireWholeFingerprint(given)
        let all: [PeerRecord]
        do { all = try allPeers() } catch { throw .storage(error) }
        guard let new = all.first(where: { Fingerprint.normalize(Node.fingerprint(of: $0.identity)) == g }) else {
            throw .newKeyNotFound(given)
        }
        guard new.identity != old.identity else {
            throw .notApplicable("\(given) is already \(old.label)'s key: nothing to replace")
        }
        if let by = new.replacedBy {
            throw .notApplicable(
                "\(given) was itself replaced by \(Node.fingerprint(of: by)): it cannot stand for \(old.label)")
        }
        if let by = old.replacedBy { throw .peerReplaced(old, by: by) }
        if let typed {
            let digits = { (text: String) in text.filter { $0.isASCII && $0.isNumber } }
            let expected = digits(safetyNumber(with: new.identity))
            guard !expected.isEmpty, digits(typed) == expected else {
                throw .safetyNumberMismatch(label: old.label, newFingerprint: Node.fingerprint(of: new.identity))
            }
        }
        let moved: Int
        do {
            moved = try store.replacePeer(old: old.identity, new: new.identity, at: nowMs)
            if let nickname = old.nickname, new.nickname == nil {
                try store.setNickname(identity: new.identity, nickname)
            }
        } catch {
            // The replacement may have committed before the nickname failed: the records
            // and the queue are read again, or a name resolved before would still send to
            // the retired key.
            peerDirectory.invalidate()
            directMessages.outboxChanged()
            throw .storage(error)
        }
        peerDirectory.invalidate()
        directMessages.outboxChanged()  // messages moved to another recipient: count and query again
        log.warning(
            "a person replaced a contact's key",
            [
                "name": old.label, "old": Node.fingerprint(of: old.identity),
                "new": Node.fingerprint(of: new.identity)
            ])
        activeConnection(for: old.identity)?.close(reason: .notTrusted, text: "key was replaced")
        perform(dialDriver.planner.redirect(from: old.identity, to: new.identity, sessions: sessionView))
        if let conn = activeConnection(for: new.identity) { pump(conn) }
        let updated = (try? store.peer(identity: new.identity)) ?? nil
        return (updated ?? new, moved)
    }

    /// Accepts a key held under the `hold` policy: it is pinned, and dialled at once.
    func accept(_ peer: PeerRecord) throws(NodeError) -> PeerRecord {
        guard peer.trust == .pending else {
            throw .notApplicable("\(peer.label) is not awaiting approval (it is \(peer.trust.rawValue))")
        }
        let updated = try setTrustAndReload(peer, .pinned)
        if let addresses = try? store.rememberedAddresses()[peer.identity] {
            rememberAddresses(of: peer.identity, addresses)
        }
        redialNow(peer)
        return updated
    }

    /// Blocks a peer: its session ends, and it gets none until unblocked.
    func block(_ peer: PeerRecord) throws(NodeError) -> PeerRecord {
        let updated = try setTrustAndReload(peer, .blocked)
        activeConnection(for: peer.identity)?.close(reason: .notTrusted, text: "blocked")
        stopDialingRemembered(peer.identity)
        log.info(
            "peer blocked by a person", ["peer": peer.label, "fingerprint": Node.fingerprint(of: peer.identity)])
        return updated
    }

    /// Unblocks a peer (back to pinned: a person verifies again if they want).
    func unblock(_ peer: PeerRecord) throws(NodeError) -> PeerRecord {
        guard peer.trust == .blocked else {
            throw .notApplicable("\(peer.label) is not blocked (it is \(peer.trust.rawValue))")
        }
        let updated = try setTrustAndReload(peer, .pinned)
        redialNow(peer)
        return updated
    }

    /// Forgets a peer's pin (its history stays): the next contact with that key is a first one.
    func forget(_ peer: PeerRecord) throws(NodeError) {
        do { try store.forgetPeer(identity: peer.identity) } catch { throw .storage(error) }
        peerDirectory.invalidate()
        activeConnection(for: peer.identity)?.close(reason: .normal, text: "forgotten")
        stopDialingRemembered(peer.identity)
    }

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

    /// The person's own name for a peer (nil removes it).
    func setNickname(_ peer: PeerRecord, _ nickname: String?) throws(NodeError) -> PeerRecord {
        do { try store.setNickname(identity: peer.identity, nickname) } catch { throw .storage(error) }
        peerDirectory.invalidate()
        return (try? store.peer(identity: peer.identity)) ?? peer
    }

    /// Earlier keys of a contact, newest first.
    func previousKeys(of peer: PeerRecord) throws(NodeError) -> [PeerRecord] {
        do { return try store.previousKeys(of: peer.identity) } catch { throw .storage(error) }
    }

    private func setTrustAndReload(_ peer: PeerRecord, _ trust: TrustState) throws(NodeError) -> PeerRecord {
        do {
            try setTrust(identity: peer.identity, trust)
            return try store.peer(identity: peer.identity) ?? peer
        } catch { throw .storage(error) }
    }

    /// Dials every target that reached this peer now, rather than after its backoff.
    private func redialNow(_ peer: PeerRecord) {
        for target in dialDriver.planner.targets(of: peer.identity) {
            perform(dialDriver.planner.dial(target, sessions: sessionView))
        }
    }
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
