/// `trust.verify` and `trust.accept_change`.

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

/// Accepts a peer's new identity key (after the user checked the new safety number):
/// pins it, and re-targets messages queued for the old key.
public struct TrustAcceptChangeParams: ControlCallParams {
    public typealias ResultType = TrustAcceptChangeResult
    public static let method = ControlMethod.trustAcceptChange
    public static let fieldNames = ["peer"]

    public var peer: String

    public init(peer: String) { self.peer = peer }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(peer, field: "peer")
    }
}

public struct TrustAcceptChangeResult: Codable, Sendable, Hashable {
    public var peer: PeerInfo
    /// Queued messages now addressed to the new key.
    public var retargeted: Int

    public init(peer: PeerInfo, retargeted: Int) {
        self.peer = peer
        self.retargeted = retargeted
    }
}
