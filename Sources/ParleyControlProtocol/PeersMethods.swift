/// `peers.list` and `peers.connect`.

/// `peers.list` takes no params.
public struct PeersListParams: ControlCallParams {
    public typealias ResultType = PeersListResult
    public static let method = ControlMethod.peersList
    public static let fieldNames: [String] = []
    public init() {}
}

public struct PeersListResult: Codable, Sendable, Hashable {
    public var peers: [PeerInfo]

    public init(peers: [PeerInfo]) { self.peers = peers }
}

/// Asks the daemon to dial an address now (useful without mDNS).
public struct PeersConnectParams: ControlCallParams {
    public typealias ResultType = PeersConnectResult
    public static let method = ControlMethod.peersConnect
    public static let fieldNames = ["address", "wait", "timeoutMs"]

    /// `host:port`, IPv6 literals in brackets: `[fe80::1%eth0]:7777`.
    public var address: String
    /// Answer once a session is up (`status: connected`) or with `connectFailed` and the
    /// reason; a failed address is then not dialled again. Default false: answer at once
    /// (`status: dialing`) and keep dialling with backoff.
    public var wait: Bool?
    /// With `wait`: give up after this many ms with `timeout` (the address is still dialled).
    public var timeoutMs: Int?

    public init(address: String, wait: Bool? = nil, timeoutMs: Int? = nil) {
        self.address = address
        self.wait = wait
        self.timeoutMs = timeoutMs
    }

    public var effectiveWait: Bool { wait ?? false }
    public var effectiveTimeoutMs: Int { timeoutMs ?? ControlLimits.defaultConnectWaitMilliseconds }

    public func validate() throws(JSONRPCError) {
        guard let hp = HostPort(address), hp.port != 0 else {
            throw JSONRPCError(
                .invalidAddress,
                "\(JSONRPCError.quoted(address)) is not host:port (IPv6 in brackets: [addr]:port)")
        }
        if let timeoutMs, !(1...ControlLimits.maxSendWaitMilliseconds).contains(timeoutMs) {
            throw .invalidParams("\"timeoutMs\" must be between 1 and \(ControlLimits.maxSendWaitMilliseconds)")
        }
    }
}

/// What `peers.connect` did.
public enum ConnectStatus: String, Codable, Sendable, Hashable, CaseIterable {
    /// Without `wait`: the dial started; the outcome arrives as `peer.online` (or never).
    case dialing
    /// With `wait`: a session with the peer at that address is up.
    case connected
}

public struct PeersConnectResult: Codable, Sendable, Hashable {
    public var address: String
    public var status: ConnectStatus
    /// With `wait`: the peer the session is with.
    public var peer: PeerInfo?

    public init(address: String, status: ConnectStatus, peer: PeerInfo? = nil) {
        self.address = address
        self.status = status
        self.peer = peer
    }
}
