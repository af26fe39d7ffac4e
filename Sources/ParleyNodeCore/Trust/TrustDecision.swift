import ParleyCore

/// What a verified card from a new session means (docs/PROTOCOL.md, "Trust"). The
/// handshake has already proved that the peer holds the card's identity and Noise keys;
/// this decides whether this node keeps the session, and what it must record.
///
/// **A peer is its key.** A card's name is a label its holder chose: it never makes the
/// card stand for another peer. A new key is a new peer, whatever name or address it
/// comes with (`NameClashes` marks look-alikes for the person); only a person replaces
/// a contact's key, by naming the new fingerprint.
///
/// Pure. Two steps so the driver reads the store only as far as needed: `known(_:card:)`
/// for an identity already in the store, `newIdentity(card:policy:)` for one never seen.
public enum TrustDecision {
    /// What to do with identities never seen before (signal-cli's `--trust-new-identities`).
    public enum NewIdentityPolicy: String, Sendable, Equatable, CaseIterable {
        /// Pin on first use and keep the session (the default).
        case accept
        /// Record it as awaiting approval; no session until a person accepts it.
        case hold
    }

    public enum Verdict: Sendable, Equatable {
        /// Keep the session; nothing to record.
        case keep
        /// Keep the session and pin the newer card (a rotation or rename by the same key).
        case keepAndUpdateCard
        /// Trust on first use: pin the new identity, keep the session.
        case pinNewPeer
        /// Record the new identity as awaiting approval and refuse the session.
        case holdNewPeer
        case refuse(Refusal)
    }

    public enum Refusal: Sendable, Equatable {
        /// A person blocked this identity.
        case blocked
        /// A person replaced this identity with another key.
        case replaced
        /// Held under the `hold` policy until a person accepts it.
        case awaitingApproval
        /// An older card than the pinned one: a replay, or a node that lost its state.
        case staleCard(presented: UInt64, pinned: UInt64)
        /// Two different cards with the same sequence: one of them was not issued honestly.
        case conflictingCard
    }

    /// The card comes from an identity already in the store.
    public static func known(_ peer: KnownPeer, card: Card) -> Verdict {
        switch peer.standing {
        case .blocked: return .refuse(.blocked)
        case .replaced: return .refuse(.replaced)
        case .awaitingApproval: return .refuse(.awaitingApproval)
        case .trusted: break
        }
        if card.sequence < peer.cardSequence {
            return .refuse(.staleCard(presented: card.sequence, pinned: peer.cardSequence))
        }
        if card.sequence == peer.cardSequence {
            return card.encoded() == peer.card ? .keep : .refuse(.conflictingCard)
        }
        return .keepAndUpdateCard
    }

    /// The card comes from an identity never seen: its name and address are irrelevant.
    public static func newIdentity(card: Card, policy: NewIdentityPolicy) -> Verdict {
        policy == .accept ? .pinNewPeer : .holdNewPeer
    }

    /// What a `cardUpdate` record received on an established session means.
    public enum CardUpdateVerdict: Sendable, Equatable {
        /// Pin it (a higher sequence from the session's own identity).
        case pin
        /// Not newer than the pinned card: ignore it.
        case ignore
        /// Expired at our clock: ignore it, and say so in the log. Well formed, so not a
        /// protocol error (the clocks may disagree), but an expired card authenticates
        /// nothing, and pinning it would make the peer's later valid cards with lower
        /// sequences look stale (docs/PROTOCOL.md "cardUpdate").
        case expired
        /// A card for another identity: a protocol violation, close the session.
        case otherIdentity
    }

    /// - `nowSeconds`: the wall clock, Unix seconds (card expiry is wall-clock time).
    public static func cardUpdate(
        _ card: Card, sessionIdentity: IdentityPublicKey, pinned: KnownPeer?,
        nowSeconds: UInt64
    ) -> CardUpdateVerdict {
        guard card.identityKey == sessionIdentity else { return .otherIdentity }
        guard !card.isExpired(now: nowSeconds) else { return .expired }
        guard let pinned, card.sequence > pinned.cardSequence else { return .ignore }
        return .pin
    }
}
