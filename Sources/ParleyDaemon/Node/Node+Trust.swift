import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Trust on first use: asks `TrustDecision` what a verified card means and records what
/// it says (pin, card update, hold for approval). A peer is its key: a name never makes a
/// new key stand for a known peer. docs/PROTOCOL.md, "Trust".
extension Node {
    enum TrustOutcome {
        case keep
        case refuse(CloseReason, String)
    }

    /// The store's record as the trust decision sees it (`PeerDirectory.knownPeer`).
    static func knownPeer(_ rec: PeerRecord) -> KnownPeer { PeerDirectory.knownPeer(rec) }

    func admitTrust(of remote: Card, connection conn: PeerConnection, dialTarget: DialTargetKey?) -> TrustOutcome {
        do {
            if let rec = try store.peer(identity: remote.identityKey) {
                return try apply(
                    TrustDecision.known(Self.knownPeer(rec), card: remote), card: remote, record: rec, connection: conn)
            }
            let verdict = TrustDecision.newIdentity(card: remote, policy: options.newIdentities)
            return try apply(verdict, card: remote, record: nil, connection: conn)
        } catch {
            log.error("trust store failure; refusing session", ["error": "\(error)"])
            return .refuse(.normal, "receiver storage failure")
        }
    }

    private func apply(
        _ verdict: TrustDecision.Verdict, card remote: Card, record: PeerRecord?,
        connection conn: PeerConnection
    ) throws(StoreError) -> TrustOutcome {
        let id = remote.identityKey.hex
        let now = nowMs
        let address = sessionDriver.links[ObjectIdentifier(conn)]?.dialTarget?.rawValue
        switch verdict {
        case .keep:
            return .keep
        case .keepAndUpdateCard:
            // A re-issued card from the same identity: a rotation or rename, accepted silently.
            guard let record else { return .keep }
            try pin(remote, over: record)
            return .keep
        case .pinNewPeer, .holdNewPeer:
            let held = verdict == .holdNewPeer
            let rec = PeerRecord(
                identity: remote.identityKey, displayName: remote.displayName, hostName: remote.hostName,
                card: remote.encoded(), cardSequence: Int64(clamping: remote.sequence),
                noiseKey: remote.noiseKey, trust: held ? .pending : .pinned, firstSeen: now,
                lastSeen: now, lastAddress: address, replacedBy: nil)
            try upsertPeer(rec)
            var fields = ["peer": remote.displayName, "fingerprint": remote.fingerprint.description]
            if let clash = nameClash(of: remote.identityKey) {
                fields["name_also_used_by"] = clash.with.map(\.fingerprintText).joined(separator: ",")
                log.warning(
                    held
                        ? "new key held for approval; its name looks like another peer's"
                        : "new peer pinned; its name looks like another peer's: it is a different key", fields)
            } else {
                log.info(held ? "new key held for approval" : "new peer pinned", fields)
            }
            emit(.newPeer(rec, address: address ?? conn.remoteAddress))
            return held ? .refuse(.notTrusted, "awaiting approval") : .keep
        case .refuse(let refusal):
            switch refusal {
            case .blocked:
                return .refuse(.notTrusted, "blocked")
            case .awaitingApproval:
                return .refuse(.notTrusted, "awaiting approval")
            case .replaced:
                attackLog.log(
                    key: id, "a key a person replaced tried to connect",
                    ["fingerprint": remote.fingerprint.description, "address": conn.remoteAddress])
                return .refuse(.notTrusted, "key was replaced")
            case .staleCard(let presented, let pinned):
                attackLog.log(
                    key: id, "peer presented an older card than the one pinned; refused",
                    [
                        "peer": record?.displayName ?? remote.displayName, "presented": "\(presented)",
                        "pinned": "\(pinned)"
                    ])
                return .refuse(.notTrusted, "stale card")
            case .conflictingCard:
                attackLog.log(
                    key: id, "two different cards with the same sequence; refused",
                    ["peer": record?.displayName ?? remote.displayName])
                return .refuse(.notTrusted, "conflicting card")
            }
        }
    }

    /// Pins a newer card of an identity already known: what it binds (Noise key, name, host)
    /// is taken from the card; trust, nickname and history stay.
    private func pin(_ card: Card, over record: PeerRecord) throws(StoreError) {
        var rec = record
        rec.card = card.encoded()
        rec.cardSequence = Int64(clamping: card.sequence)
        rec.noiseKey = card.noiseKey
        rec.displayName = card.displayName
        rec.hostName = card.hostName
        try upsertPeer(rec)
    }

    // MARK: Names

    /// Which live peers' labels (nickname, or self-asserted name) look alike, or like ours.
    /// Cached until a peer record is written (`PeerDirectory`).
    func nameClashes() -> [IdentityPublicKey: NameClashes.Clash] { peerDirectory.nameClashes() }

    func nameClash(of identity: IdentityPublicKey) -> NameClashes.Clash? { nameClashes()[identity] }

    // MARK: Card updates on a live session

    func connection(_ conn: PeerConnection, receivedCard bytes: [UInt8]) {
        guard let peer = conn.remoteIdentityKey else { return }
        do {
            let newCard: Card
            do { newCard = try Card.decode(bytes) } catch {
                // A cardUpdate that does not decode and verify is a malformed record
                // (docs/PROTOCOL.md "Record types"), answered like any other.
                attackLog.log(
                    key: conn.remoteAddress, "undecodable card update; closing",
                    ["address": conn.remoteAddress, "error": "\(error)"])
                conn.close(reason: .protocolError, text: "card update: \(error)")
                return
            }
            let rec = try store.peer(identity: peer)
            switch TrustDecision.cardUpdate(
                newCard, sessionIdentity: peer, pinned: rec.map(Self.knownPeer),
                nowSeconds: UInt64(max(0, nowMs / 1000)))
            {
            case .otherIdentity:
                attackLog.log(
                    key: conn.remoteAddress, "card update for another identity refused", ["address": conn.remoteAddress]
                )
                conn.close(reason: .protocolError, text: "card update for another identity")
            case .ignore:
                break
            case .expired:
                log.warning(
                    "expired card update ignored", ["peer": peer.fingerprintText, "sequence": "\(newCard.sequence)"])
            case .pin:
                guard let rec else { return }
                try pin(newCard, over: rec)
                log.info("peer re-issued its card", ["peer": newCard.displayName, "sequence": "\(newCard.sequence)"])
            }
        } catch {
            log.warning("bad card update", ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }
}
