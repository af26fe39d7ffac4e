import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Trust on first use: asks `TrustDecision` what a verified card means and records what
/// it says (pin, card update, pending key change). docs/PROTOCOL.md, "Trust".
extension Node {
    enum TrustOutcome {
        case keep
        case refuse(CloseReason, String)
    }

    /// The store's record as the trust decision sees it.
    static func knownPeer(_ rec: PeerRecord) -> KnownPeer? {
        guard let identity = IdentityPublicKey(hex: rec.identity) else { return nil }
        let standing: KnownPeer.Standing
        if rec.trust == .blocked {
            standing = .blocked
        } else if rec.replacedBy != nil {
            standing = .replaced
        } else if rec.trust == .changed {
            standing = .keyChangePending
        } else {
            standing = .trusted
        }
        return KnownPeer(identity: identity, displayName: rec.displayName,
                         cardSequence: UInt64(max(0, rec.cardSequence)), card: rec.card, standing: standing)
    }

    func admitTrust(of remote: Card, connection conn: PeerConnection, dialTarget: DialTargetKey?) -> TrustOutcome {
        let id = remote.identityKey.hex
        do {
            if let rec = try store.peer(identity: id), let known = Self.knownPeer(rec) {
                return try apply(TrustDecision.known(known, card: remote), card: remote, record: rec, connection: conn)
            }
            let namesakes = try store.peers(named: remote.displayName).compactMap(Self.knownPeer)
            var atAddress: KnownPeer?
            if namesakes.allSatisfy({ $0.identity == remote.identityKey }), let key = dialTarget {
                atAddress = try store.peer(atAddress: key.rawValue).flatMap(Self.knownPeer)
            }
            let verdict = TrustDecision.newIdentity(card: remote, namesakes: namesakes, atDialedAddress: atAddress)
            return try apply(verdict, card: remote, record: nil, connection: conn)
        } catch {
            log.error("trust store failure; refusing session", ["error": "\(error)"])
            return .refuse(.normal, "receiver storage failure")
        }
    }

    private func apply(_ verdict: TrustDecision.Verdict, card remote: Card, record: PeerRecord?,
                       connection conn: PeerConnection) throws(StoreError) -> TrustOutcome {
        let id = remote.identityKey.hex
        let now = nowMs
        switch verdict {
        case .keep:
            return .keep
        case .keepAndUpdateCard:
            // A re-issued card from the same identity: a rotation or rename, accepted silently.
            guard var rec = record else { return .keep }
            rec.card = remote.encoded()
            rec.cardSequence = Int64(clamping: remote.sequence)
            rec.noiseKey = remote.noiseKey.hex
            rec.displayName = remote.displayName
            rec.hostName = remote.hostName
            try upsertPeer(rec)
            return .keep
        case .pinNewPeer:
            try upsertPeer(PeerRecord(identity: id, displayName: remote.displayName, hostName: remote.hostName,
                                      card: remote.encoded(), cardSequence: Int64(clamping: remote.sequence),
                                      noiseKey: remote.noiseKey.hex, trust: .pinned, firstSeen: now, lastSeen: now,
                                      lastAddress: links[ObjectIdentifier(conn)]?.dialTarget?.rawValue, replacedBy: nil))
            log.info("new peer pinned", ["peer": remote.displayName, "fingerprint": remote.fingerprint.description])
            return .keep
        case .holdKeyChange(let previous, let evidence):
            let address = links[ObjectIdentifier(conn)]?.dialTarget?.rawValue ?? conn.remoteAddress
            let existing = try store.pendingKeyChange(newIdentity: id)
            peerCache = nil
            let change = try store.recordKeyChange(displayName: remote.displayName, oldIdentity: previous.hex,
                                                   newIdentity: id, newCard: remote.encoded(), address: address, at: now)
            if peerRecord(previous.hex)?.trust != .changed { try setTrust(identity: previous.hex, .changed) }
            if existing == nil {
                let what = evidence == .sameName
                    ? "KEY CHANGED: a different identity key is using a known name; refused until a person accepts it"
                    : "KEY CHANGED: a different identity key answered at a known peer's address; refused until a person accepts it"
                log.warning(what, ["name": remote.displayName, "old": previous.fingerprintText,
                                   "new": remote.fingerprint.description, "address": conn.remoteAddress])
                emit(.keyChanged(change))
            }
            return .refuse(.keyChangePending, "key change pending")
        case .refuse(let refusal):
            switch refusal {
            case .blocked:
                return .refuse(.notTrusted, "blocked")
            case .replaced:
                attackLog.log(key: id, "an identity that was replaced after a key change tried to connect",
                              ["fingerprint": remote.fingerprint.description, "address": conn.remoteAddress])
                return .refuse(.notTrusted, "identity was replaced")
            case .staleCard(let presented, let pinned):
                attackLog.log(key: id, "peer presented an older card than the one pinned; refused",
                              ["peer": record?.displayName ?? remote.displayName, "presented": "\(presented)",
                               "pinned": "\(pinned)"])
                return .refuse(.notTrusted, "stale card")
            case .conflictingCard:
                attackLog.log(key: id, "two different cards with the same sequence; refused",
                              ["peer": record?.displayName ?? remote.displayName])
                return .refuse(.notTrusted, "conflicting card")
            }
        }
    }

    // MARK: Card updates on a live session

    func connection(_ conn: PeerConnection, receivedCard bytes: [UInt8]) {
        guard let peer = conn.remoteIdentityKey else { return }
        do {
            let newCard = try Card.decode(bytes)
            let rec = try store.peer(identity: peer.hex)
            switch TrustDecision.cardUpdate(newCard, sessionIdentity: peer, pinned: rec.flatMap(Self.knownPeer)) {
            case .otherIdentity:
                attackLog.log(key: conn.remoteAddress, "card update for another identity refused", ["address": conn.remoteAddress])
                conn.close(reason: .protocolError, text: "card update for another identity")
            case .ignore:
                break
            case .pin:
                guard var rec else { return }
                rec.card = newCard.encoded()
                rec.cardSequence = Int64(clamping: newCard.sequence)
                rec.noiseKey = newCard.noiseKey.hex
                rec.displayName = newCard.displayName
                rec.hostName = newCard.hostName
                try upsertPeer(rec)
                log.info("peer re-issued its card", ["peer": newCard.displayName, "sequence": "\(newCard.sequence)"])
            }
        } catch {
            log.warning("bad card update", ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }
}
