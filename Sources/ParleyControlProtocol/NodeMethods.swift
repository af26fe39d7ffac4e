/// `node.status` and `node.whoami`: facts about this node.

/// Whether mDNS discovery is running.
public enum MDNSState: String, Codable, Sendable, Hashable, CaseIterable {
    case on, off
    /// Enabled in the configuration but avahi is not reachable.
    case unavailable
}

/// `node.status` takes no params.
public struct NodeStatusParams: ControlCallParams {
    public typealias ResultType = NodeStatusResult
    public static let method = ControlMethod.nodeStatus
    public static let fieldNames: [String] = []
    public init() {}
}

public struct NodeStatusResult: Codable, Sendable, Hashable {
    /// parleyd's version string.
    public var version: String
    public var name: String
    public var fingerprint: String
    /// Addresses the peer listener is bound to, as `host:port`.
    public var listen: [String]
    public var peersOnline: Int
    public var peersKnown: Int
    /// Outgoing messages not yet delivered, over all peers.
    public var queued: Int
    public var uptimeSeconds: Int
    public var mdns: MDNSState
    /// Where a colleague can reach this node, as `host:port` to give them for
    /// `peers.connect`: the bound addresses, with a wildcard (0.0.0.0, ::) replaced by
    /// this host's interface addresses that can be dialled (no loopback). Absent from
    /// older daemons.
    public var reachableAt: [String]?

    public init(
        version: String, name: String, fingerprint: String, listen: [String], peersOnline: Int,
        peersKnown: Int, queued: Int, uptimeSeconds: Int, mdns: MDNSState, reachableAt: [String]? = nil
    ) {
        self.reachableAt = reachableAt
        self.version = version
        self.name = name
        self.fingerprint = fingerprint
        self.listen = listen
        self.peersOnline = peersOnline
        self.peersKnown = peersKnown
        self.queued = queued
        self.uptimeSeconds = uptimeSeconds
        self.mdns = mdns
    }
}

/// `node.whoami` takes no params.
public struct NodeWhoamiParams: ControlCallParams {
    public typealias ResultType = NodeWhoamiResult
    public static let method = ControlMethod.nodeWhoami
    public static let fieldNames: [String] = []
    public init() {}
}

/// This node's identity: what a user shares for others to verify.
public struct NodeWhoamiResult: Codable, Sendable, Hashable {
    public var name: String
    public var host: String
    public var fingerprint: String
    /// Ed25519 identity public key, lowercase hex.
    public var identityKey: String
    /// X25519 Noise static public key, lowercase hex.
    public var noiseKey: String
    /// The current signed card, lowercase hex of its wire encoding.
    public var card: String
    public var cardSequence: Int

    public init(
        name: String, host: String, fingerprint: String, identityKey: String, noiseKey: String,
        card: String, cardSequence: Int
    ) {
        self.name = name
        self.host = host
        self.fingerprint = fingerprint
        self.identityKey = identityKey
        self.noiseKey = noiseKey
        self.card = card
        self.cardSequence = cardSequence
    }
}

/// `node.rotate_key`: replace this node's Noise static key and re-issue its card with a
/// higher sequence. Online peers get the new card at once, the others at next contact.
public struct NodeRotateKeyParams: ControlCallParams {
    public typealias ResultType = NodeRotateKeyResult
    public static let method = ControlMethod.nodeRotateKey
    public static let fieldNames: [String] = []
    public init() {}
}

public struct NodeRotateKeyResult: Codable, Sendable, Hashable {
    /// The new Noise static public key (hex).
    public var noiseKey: String
    /// The new card's sequence number.
    public var cardSequence: Int
    /// Peers that were sent the new card right away.
    public var peersNotified: Int

    public init(noiseKey: String, cardSequence: Int, peersNotified: Int) {
        self.noiseKey = noiseKey
        self.cardSequence = cardSequence
        self.peersNotified = peersNotified
    }
}
