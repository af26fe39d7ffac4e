import ParleyCore
import ParleyNodeCore
import ParleyStore

/// A `cardUpdate` record on a live session: the peer re-issued its card (a rename, a new
/// Noise key). Only a newer, unexpired card of the session's own identity is pinned
/// (`TrustDecision.cardUpdate`); a card of another identity closes the session.
extension TrustDriver {
    /// What became of a card update.
    enum CardUpdateOutcome: Equatable {
        /// The link carries no proved identity (not an established session): nothing read.
        case noSession
        /// It did not decode or verify: the session was closed (a malformed record).
        case undecodable
        /// A card of another identity: the session was closed.
        case otherIdentity
        /// Not newer than the pinned card (or the key is not pinned): nothing changed.
        case ignored
        /// Expired at our clock: ignored, and logged.
        case expired
        /// Pinned: the card's name, host and Noise key are the peer's now.
        case pinned
        /// The store could not read or record it: the pinned card stays (the peer's next
        /// handshake presents the newer card again). The text is the store's error.
        case notRecorded(String)
    }

    @discardableResult
    func received(card bytes: [UInt8], on link: any TrustLink) -> CardUpdateOutcome {
        guard let peer = link.remoteIdentityKey else { return .noSession }
        let newCard: Card
        do { newCard = try Card.decode(bytes) } catch {
            // A cardUpdate that does not decode and verify is a malformed record
            // (docs/PROTOCOL.md "Record types"), answered like any other.
            host?.logAttack(
                key: link.remoteAddress, "undecodable card update; closing",
                ["address": link.remoteAddress, "error": "\(error)"])
            link.close(reason: .protocolError, text: "card update: \(error)")
            return .undecodable
        }
        do {
            let rec = try store.peer(identity: peer)
            switch TrustDecision.cardUpdate(
                newCard, sessionIdentity: peer, pinned: rec.map(PeerDirectory.knownPeer),
                nowSeconds: UInt64(max(0, nowMs / 1000)))
            {
            case .otherIdentity:
                host?.logAttack(
                    key: link.remoteAddress, "card update for another identity refused",
                    ["address": link.remoteAddress])
                link.close(reason: .protocolError, text: "card update for another identity")
                return .otherIdentity
            case .ignore:
                return .ignored
            case .expired:
                log.warning(
                    "expired card update ignored", ["peer": Self.printed(peer), "sequence": "\(newCard.sequence)"])
                return .expired
            case .pin:
                guard let rec else { return .ignored }
                try pin(newCard, over: rec)
                log.info("peer re-issued its card", ["peer": newCard.displayName, "sequence": "\(newCard.sequence)"])
                return .pinned
            }
        } catch {
            log.error(
                "card update not recorded: the store failed; the pinned card stays",
                ["peer": Self.printed(peer), "error": "\(error)"])
            return .notRecorded("\(error)")
        }
    }
}
