/// How far the user trusts a peer's identity key.
public enum PeerTrust: String, Codable, Sendable, Hashable, CaseIterable {
    /// Seen (e.g. via mDNS) but never connected: no key pinned yet.
    case new
    /// Key pinned on first contact (trust on first use), not verified by the user.
    case pinned
    /// The user compared the fingerprint or safety number (`trust.verify`, `trust.replace`).
    case verified
    /// Held under `new_identities = "hold"` until the user accepts it (`trust.accept`):
    /// no session, nothing sent, nothing stored from it.
    case pending
    /// The user blocked the peer: no session, nothing stored from it.
    case blocked
}

/// Another peer whose name a person could mistake for this one's. Names are labels a peer
/// chooses; the fingerprint says who it is.
public struct NameClashInfo: Codable, Sendable, Hashable {
    public enum Kind: String, Codable, Sendable, Hashable {
        /// Exactly the same name.
        case sameName
        /// A name that looks the same (case, look-alike letters; Unicode TS #39 skeleton).
        case confusable
    }

    public var kind: Kind
    /// The other peers (an empty list: the name is this node's own).
    public var with: [PeerCandidate]

    public init(kind: Kind, with: [PeerCandidate]) {
        self.kind = kind
        self.with = with
    }
}

/// A peer as the daemon knows it. Optional fields are always present, `null` when empty.
public struct PeerInfo: Codable, Sendable, Hashable {
    /// Display name from the peer's signed card: what the peer calls itself.
    public var name: String
    /// The user's own name for the peer (`peers.nickname`); shown instead of `name`.
    public var nickname: String?
    /// Set when another peer's name (or this node's) looks like this one's.
    public var nameClash: NameClashInfo?
    /// Host name from the peer's card.
    public var host: String
    /// Fingerprint of the pinned identity key, grouped (`xxxx-xxxx-…`).
    public var fingerprint: String
    /// Pinned Ed25519 identity key, lowercase hex.
    public var identityKey: String
    public var online: Bool
    /// Known `host:port` addresses, most recently working first.
    public var addresses: [String]
    public var trust: PeerTrust
    /// Safety number of this node's and the peer's pinned identity keys.
    public var safetyNumber: String
    /// Unix time in milliseconds of the last session, nil if never connected.
    public var lastSeen: Int?
    /// Outgoing messages waiting for this peer.
    public var queued: Int
    /// Incoming messages from this peer not yet marked read (`messages.mark_read`).
    public var unread: Int
    /// The peer's status line ("in a meeting"), while it is online and has one; else null.
    public var status: String?

    public init(
        name: String, host: String, fingerprint: String, identityKey: String, online: Bool,
        addresses: [String], trust: PeerTrust, safetyNumber: String, lastSeen: Int?,
        queued: Int, unread: Int = 0, nickname: String? = nil, nameClash: NameClashInfo? = nil,
        status: String? = nil
    ) {
        self.status = status
        self.name = name
        self.nickname = nickname
        self.nameClash = nameClash
        self.host = host
        self.fingerprint = fingerprint
        self.identityKey = identityKey
        self.online = online
        self.addresses = addresses
        self.trust = trust
        self.safetyNumber = safetyNumber
        self.lastSeen = lastSeen
        self.queued = queued
        self.unread = unread
    }

    enum CodingKeys: String, CodingKey {
        case name, nickname, nameClash, host, fingerprint, identityKey, online, addresses, trust, safetyNumber
        case lastSeen, queued, unread, status
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(nickname, forKey: .nickname)  // null, not absent, when nil
        try c.encode(nameClash, forKey: .nameClash)
        try c.encode(host, forKey: .host)
        try c.encode(fingerprint, forKey: .fingerprint)
        try c.encode(identityKey, forKey: .identityKey)
        try c.encode(online, forKey: .online)
        try c.encode(addresses, forKey: .addresses)
        try c.encode(trust, forKey: .trust)
        try c.encode(safetyNumber, forKey: .safetyNumber)
        try c.encode(lastSeen, forKey: .lastSeen)  // null, not absent, when nil
        try c.encode(queued, forKey: .queued)
        try c.encode(unread, forKey: .unread)
        try c.encode(status, forKey: .status)  // null, not absent, when nil
    }
}

extension PeerInfo {
    /// What a person sees: their nickname for the peer, or the name it gives itself.
    public var label: String { nickname ?? name }
}
