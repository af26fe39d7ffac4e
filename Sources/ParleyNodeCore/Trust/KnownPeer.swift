import ParleyCore

/// What the trust decision needs to know about a pinned peer (the driver builds it from
/// the store's record).
public struct KnownPeer: Sendable, Equatable {
    public enum Standing: Sendable, Equatable {
        /// Pinned on first use, or verified by a person: sessions are kept.
        case trusted
        /// Held under the `hold` policy until a person accepts it.
        case awaitingApproval
        /// A person refused it.
        case blocked
        /// A person replaced it with another key.
        case replaced
    }

    public var identity: IdentityPublicKey
    public var displayName: String
    /// The pinned card's sequence and exact bytes.
    public var cardSequence: UInt64
    public var card: [UInt8]
    public var standing: Standing

    public init(
        identity: IdentityPublicKey, displayName: String, cardSequence: UInt64, card: [UInt8],
        standing: Standing
    ) {
        self.identity = identity
        self.displayName = displayName
        self.cardSequence = cardSequence
        self.card = card
        self.standing = standing
    }
}
