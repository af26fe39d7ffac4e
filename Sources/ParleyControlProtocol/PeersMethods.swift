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
    public static let fieldNames = ["address"]

    /// `host:port`, IPv6 literals in brackets: `[fe80::1%eth0]:7777`.
    public var address: String

    public init(address: String) { self.address = address }

    public func validate() throws(JSONRPCError) {
        guard let hp = HostPort(address), hp.port != 0 else {
            throw JSONRPCError(
                .invalidAddress,
                "\(JSONRPCError.quoted(address)) is not host:port (IPv6 in brackets: [addr]:port)")
        }
    }
}

/// What `peers.connect` started: the outcome arrives later as `peer.online`.
public enum ConnectStatus: String, Codable, Sendable, Hashable, CaseIterable {
    case dialing
}

public struct PeersConnectResult: Codable, Sendable, Hashable {
    public var address: String
    public var status: ConnectStatus

    public init(address: String, status: ConnectStatus) {
        self.address = address
        self.status = status
    }
}
