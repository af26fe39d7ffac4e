/// How far the user trusts a peer's identity key.
public enum PeerTrust: String, Codable, Sendable, Hashable, CaseIterable {
    /// Seen (e.g. via mDNS) but never connected: no key pinned yet.
    case new
    /// Key pinned on first contact (trust on first use), not verified by the user.
    case pinned
    /// The user compared the fingerprint or safety number (`trust.verify`).
    case verified
    /// The peer presented a different identity key; see `PeerInfo.keyChange`.
    case changed
    /// The user blocked the peer.
    case blocked
}

/// A pending identity-key change: the peer now presents another key than the pinned one.
public struct KeyChangeInfo: Codable, Sendable, Hashable {
    public var newFingerprint: String
    /// Unix time in milliseconds.
    public var detectedAt: Int

    public init(newFingerprint: String, detectedAt: Int) {
        self.newFingerprint = newFingerprint
        self.detectedAt = detectedAt
    }
}

/// A peer as the daemon knows it. Optional fields are always present, `null` when empty.
public struct PeerInfo: Codable, Sendable, Hashable {
    /// Display name from the peer's signed card.
    public var name: String
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
    public var keyChange: KeyChangeInfo?
    /// Incoming messages from this peer not yet marked read (`messages.mark_read`).
    public var unread: Int

    public init(
        name: String, host: String, fingerprint: String, identityKey: String, online: Bool,
        addresses: [String], trust: PeerTrust, safetyNumber: String, lastSeen: Int?,
        queued: Int, keyChange: KeyChangeInfo?, unread: Int = 0
    ) {
        self.name = name
        self.host = host
        self.fingerprint = fingerprint
        self.identityKey = identityKey
        self.online = online
        self.addresses = addresses
        self.trust = trust
        self.safetyNumber = safetyNumber
        self.lastSeen = lastSeen
        self.queued = queued
        self.keyChange = keyChange
        self.unread = unread
    }

    enum CodingKeys: String, CodingKey {
        case name, host, fingerprint, identityKey, online, addresses, trust, safetyNumber
        case lastSeen, queued, keyChange, unread
    }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .name)
        try c.encode(host, forKey: .host)
        try c.encode(fingerprint, forKey: .fingerprint)
        try c.encode(identityKey, forKey: .identityKey)
        try c.encode(online, forKey: .online)
        try c.encode(addresses, forKey: .addresses)
        try c.encode(trust, forKey: .trust)
        try c.encode(safetyNumber, forKey: .safetyNumber)
        try c.encode(lastSeen, forKey: .lastSeen)  // null, not absent, when nil
        try c.encode(queued, forKey: .queued)
        try c.encode(keyChange, forKey: .keyChange)
        try c.encode(unread, forKey: .unread)
    }
}
