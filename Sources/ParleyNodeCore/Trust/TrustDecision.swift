import ParleyCore

/// What a verified card from a new session means (docs/PROTOCOL.md, "Trust"). The
/// handshake has already proved that the peer holds the card's identity and Noise keys;
/// this decides whether this node keeps the session, and what it must record.
///
/// Pure. Two steps so the driver reads the store only as far as needed: `known(_:card:)`
/// for an identity already pinned, `newIdentity(card:namesakes:atDialedAddress:)` for one
/// never seen.
public enum TrustDecision {
    public enum Verdict: Sendable, Equatable {
        /// Keep the session; nothing to record.
        case keep
        /// Keep the session and pin the newer card (a rotation or rename by the same key).
        case keepAndUpdateCard
        /// Trust on first use: pin the new identity, keep the session.
        case pinNewPeer
        /// A new identity presents a known peer's name, or answers at its address: record
        /// a pending key change against `previous` and refuse until a person decides.
        case holdKeyChange(previous: IdentityPublicKey, reason: KeyChangeEvidence)
        case refuse(Refusal)
    }

    /// Why a new identity is taken for a possible key change of a known peer.
    public enum KeyChangeEvidence: Sendable, Equatable {
        case sameName
        case sameAddress
    }

    public enum Refusal: Sendable, Equatable {
        /// A person blocked this identity.
        case blocked
        /// A person accepted another identity in its place.
        case replaced
        /// An older card than the pinned one: a replay, or a node that lost its store.
        case staleCard(presented: UInt64, pinned: UInt64)
        /// Two different cards with the same sequence: one of them was not issued honestly.
        case conflictingCard
    }

    /// The card comes from an identity that is already pinned.
    public static func known(_ peer: KnownPeer, card: Card) -> Verdict {
        switch peer.standing {
        case .blocked: return .refuse(.blocked)
        case .replaced: return .refuse(.replaced)
        case .trusted, .keyChangePending: break
        }
        if card.sequence < peer.cardSequence {
            return .refuse(.staleCard(presented: card.sequence, pinned: peer.cardSequence))
        }
        if card.sequence == peer.cardSequence {
            return card.encoded() == peer.card ? .keep : .refuse(.conflictingCard)
        }
        return .keepAndUpdateCard
    }

    /// The card comes from an identity never seen. `namesakes`: pinned peers whose display
    /// name is the card's; `atDialedAddress`: the live (not replaced) peer last reached at
    /// the address this connection dialled, if any.
    public static func newIdentity(card: Card, namesakes: [KnownPeer], atDialedAddress: KnownPeer?) -> Verdict {
        if let previous = namesakes.first(where: { $0.identity != card.identityKey }) {
            return .holdKeyChange(previous: previous.identity, reason: .sameName)
        }
        if let previous = atDialedAddress, previous.identity != card.identityKey, previous.standing != .replaced {
            return .holdKeyChange(previous: previous.identity, reason: .sameAddress)
        }
        return .pinNewPeer
    }

    /// What a `cardUpdate` record received on an established session means.
    public enum CardUpdateVerdict: Sendable, Equatable {
        /// Pin it (a higher sequence from the session's own identity).
        case pin
        /// Not newer than the pinned card: ignore it.
        case ignore
        /// A card for another identity: a protocol violation, close the session.
        case otherIdentity
    }

    public static func cardUpdate(_ card: Card, sessionIdentity: IdentityPublicKey, pinned: KnownPeer?) -> CardUpdateVerdict {
        guard card.identityKey == sessionIdentity else { return .otherIdentity }
        guard let pinned, card.sequence > pinned.cardSequence else { return .ignore }
        return .pin
    }
}
