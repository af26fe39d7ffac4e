/// `trust.*` and `peers.nickname`: a peer is its key; these are the person's decisions about keys.

/// Marks a peer verified after the user compared its fingerprint out of band.
public struct TrustVerifyParams: ControlCallParams {
    public typealias ResultType = TrustVerifyResult
    public static let method = ControlMethod.trustVerify
    public static let fieldNames = ["peer", "fingerprint"]

    public var peer: String
    /// The full fingerprint as the user read it; case and `-`/space/`:` separators ignored.
    public var fingerprint: String

    public init(peer: String, fingerprint: String) {
        self.peer = peer
        self.fingerprint = fingerprint
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(peer, field: "peer")
        try ParamCheck.peerSelector(fingerprint, field: "fingerprint")
    }
}

public struct TrustVerifyResult: Codable, Sendable, Hashable {
    public var peer: PeerInfo

    public init(peer: PeerInfo) { self.peer = peer }
}

/// The one peer a trust method acts on, and the answer of those that return it.
public struct TrustPeerResult: Codable, Sendable, Hashable {
    public var peer: PeerInfo

    public init(peer: PeerInfo) { self.peer = peer }
}

/// Everything a person needs to decide about a key: its fingerprint, the safety number
/// computed with *this* key, a QR-friendly text, and the keys the contact had before.
public struct TrustShowParams: OnePeerParams {
    public typealias ResultType = TrustShowResult
    public static let method = ControlMethod.trustShow
    public var peer: String
    public init(peer: String) { self.peer = peer }
}

public struct PreviousKeyInfo: Codable, Sendable, Hashable {
    public var fingerprint: String
    public var name: String
    /// Unix milliseconds.
    public var firstSeen: Int
    public var lastSeen: Int

    public init(fingerprint: String, name: String, firstSeen: Int, lastSeen: Int) {
        self.fingerprint = fingerprint
        self.name = name
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
    }
}

public struct TrustShowResult: Codable, Sendable, Hashable {
    public var peer: PeerInfo
    /// This node's fingerprint (what the other person should read out).
    public var yourFingerprint: String
    /// `parley:<your compact fingerprint>:<peer compact fingerprint>:<safety number digits>`:
    /// one line to encode as a QR code or read aloud.
    public var qrText: String
    /// Keys the contact had before this one, newest first.
    public var previousKeys: [PreviousKeyInfo]

    public init(peer: PeerInfo, yourFingerprint: String, qrText: String, previousKeys: [PreviousKeyInfo]) {
        self.peer = peer
        self.yourFingerprint = yourFingerprint
        self.qrText = qrText
        self.previousKeys = previousKeys
    }
}

/// Replaces a contact's key (the contact reinstalled): the person names the old contact
/// and the **whole** fingerprint of the new key, after comparing the safety number that
/// `trust.show` computes with the new key. Queued messages move to the new key; the old
/// one is marked replaced. Nothing is accepted without the new fingerprint.
public struct TrustReplaceParams: ControlCallParams {
    public typealias ResultType = TrustReplaceResult
    public static let method = ControlMethod.trustReplace
    public static let fieldNames = ["peer", "newFingerprint", "safetyNumber"]
    /// A safety number is 60 digits; with spaces, dashes or line breaks as a person types
    /// them, well under this.
    public static let maxSafetyNumberBytes = 256

    public var peer: String
    public var newFingerprint: String
    /// The safety number the person read from the other device (with the new key), when
    /// they give it: the replacement is then made only if it is the one computed with the
    /// new key (digits compared; spaces and separators ignored). `parley web`'s
    /// confirmation window always sends it (docs/WEB.md "Changing who you talk to").
    public var safetyNumber: String?

    public init(peer: String, newFingerprint: String, safetyNumber: String? = nil) {
        self.peer = peer
        self.newFingerprint = newFingerprint
        self.safetyNumber = safetyNumber
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(peer, field: "peer")
        try ParamCheck.peerSelector(newFingerprint, field: "newFingerprint")
        if let safetyNumber, safetyNumber.utf8.count > Self.maxSafetyNumberBytes {
            throw JSONRPCError.invalidParams(
                "safetyNumber is \(safetyNumber.utf8.count) bytes; a safety number is 60 digits")
        }
    }
}

public struct TrustReplaceResult: Codable, Sendable, Hashable {
    /// The contact, now with the new key.
    public var peer: PeerInfo
    /// Queued messages now addressed to the new key.
    public var retargeted: Int

    public init(peer: PeerInfo, retargeted: Int) {
        self.peer = peer
        self.retargeted = retargeted
    }
}

/// Params that are one peer selector: `trust.accept`, `trust.block`, `trust.unblock`,
/// `trust.forget`, `trust.show`.
public protocol OnePeerParams: ControlCallParams {
    var peer: String { get }
    init(peer: String)
}

extension OnePeerParams {
    public static var fieldNames: [String] { ["peer"] }
    public func validate() throws(JSONRPCError) { try ParamCheck.peerSelector(peer, field: "peer") }
}

/// A key held for approval becomes pinned.
public struct TrustAcceptParams: OnePeerParams {
    public typealias ResultType = TrustPeerResult
    public static let method = ControlMethod.trustAccept
    public var peer: String
    public init(peer: String) { self.peer = peer }
}

/// No session, nothing sent, nothing stored, until unblocked.
public struct TrustBlockParams: OnePeerParams {
    public typealias ResultType = TrustPeerResult
    public static let method = ControlMethod.trustBlock
    public var peer: String
    public init(peer: String) { self.peer = peer }
}

public struct TrustUnblockParams: OnePeerParams {
    public typealias ResultType = TrustPeerResult
    public static let method = ControlMethod.trustUnblock
    public var peer: String
    public init(peer: String) { self.peer = peer }
}

public struct TrustForgetParams: OnePeerParams {
    public typealias ResultType = TrustForgetResult
    public static let method = ControlMethod.trustForget
    public var peer: String
    public init(peer: String) { self.peer = peer }
}

public struct TrustForgetResult: Codable, Sendable, Hashable {
    /// The fingerprint that was forgotten.
    public var fingerprint: String
    /// The keys the forgotten one had replaced (a person's earlier, retired keys): they stay
    /// refused, now `blocked`, so forgetting cannot make them current and trusted again.
    /// Empty when it had replaced none.
    public var blocked: [PeerInfo]

    public init(fingerprint: String, blocked: [PeerInfo] = []) {
        self.fingerprint = fingerprint
        self.blocked = blocked
    }

    enum CodingKeys: String, CodingKey { case fingerprint, blocked }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        fingerprint = try c.decode(String.self, forKey: .fingerprint)
        // Absent from a daemon that predates it.
        blocked = try c.decodeIfPresent([PeerInfo].self, forKey: .blocked) ?? []
    }
}

/// The person's own name for a peer; `nickname: null` removes it.
public struct PeersNicknameParams: ControlCallParams {
    public typealias ResultType = TrustPeerResult
    public static let method = ControlMethod.peersNickname
    public static let fieldNames = ["peer", "nickname"]
    public var peer: String
    public var nickname: String?

    public init(peer: String, nickname: String?) {
        self.peer = peer
        self.nickname = nickname
    }

    enum CodingKeys: String, CodingKey { case peer, nickname }

    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(peer, forKey: .peer)
        try c.encode(nickname, forKey: .nickname)  // null removes the nickname
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(peer, field: "peer")
        if let nickname {
            guard !nickname.isEmpty, nickname.utf8.count <= 64 else {
                throw .invalidParams("\"nickname\" must be 1 to 64 bytes")
            }
            guard !nickname.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                throw .invalidParams("\"nickname\" must not contain control characters")
            }
        }
    }
}
