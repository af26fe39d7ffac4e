import ParleyCore

/// How far this node trusts a peer's identity.
public enum TrustState: String, Codable, Sendable {
    /// Accepted on first contact (trust on first use), not verified by a person.
    case pinned
    /// The user compared fingerprints or the safety number out of band.
    case verified
    /// Held until a person accepts it (policy `new_identities = "hold"`): no session,
    /// nothing sent to it, nothing stored from it.
    case pending
    /// The user refuses this peer: no session, nothing stored from it.
    case blocked
}

/// A peer this node knows, with the latest card it accepted from it.
public struct PeerRecord: Sendable, Equatable {
    /// The peer's Ed25519 public key (stored as lowercase hex; the store converts).
    public var identity: IdentityPublicKey
    public var displayName: String
    public var hostName: String
    /// The latest accepted encoded card, byte for byte.
    public var card: [UInt8]
    public var cardSequence: Int64
    /// The peer's X25519 Noise static public key.
    public var noiseKey: NoisePublicKey
    public var trust: TrustState
    /// Unix ms.
    public var firstSeen: Int64
    /// Unix ms.
    public var lastSeen: Int64
    /// "host:port" last dialled or seen.
    public var lastAddress: String?
    /// The identity that replaced this one (a person replaced the contact's key).
    public var replacedBy: IdentityPublicKey?
    /// The person's own name for this peer; shown instead of `displayName`, which is only
    /// what the peer calls itself.
    public var nickname: String?

    public init(
        identity: IdentityPublicKey, displayName: String, hostName: String, card: [UInt8], cardSequence: Int64,
        noiseKey: NoisePublicKey, trust: TrustState, firstSeen: Int64, lastSeen: Int64,
        lastAddress: String? = nil, replacedBy: IdentityPublicKey? = nil, nickname: String? = nil
    ) {
        self.identity = identity
        self.displayName = displayName
        self.hostName = hostName
        self.card = card
        self.cardSequence = cardSequence
        self.noiseKey = noiseKey
        self.trust = trust
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.lastAddress = lastAddress
        self.replacedBy = replacedBy
        self.nickname = nickname
    }

    /// What the person sees: their nickname, or the name the peer gives itself.
    public var label: String { nickname ?? displayName }
}
