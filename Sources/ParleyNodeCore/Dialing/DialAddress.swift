import ParleyCore

/// One address to dial: a host (name, IPv4 or IPv6 literal) and a TCP port. The driver
/// validates addresses before they reach the planner (`HostPort` on the control side).
public struct DialAddress: Hashable, Sendable, CustomStringConvertible {
    public let host: String
    public let port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// "host:port", with IPv6 literals in brackets.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// The name of a dial target: a configured address ("10.0.0.5:7744") or an mDNS
/// instance ("mdns:alice"). One target is one peer we want a session with.
public struct DialTargetKey: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(address: DialAddress) { rawValue = address.description }
    /// A peer remembered from earlier sessions: one target per identity, whose candidates
    /// are the addresses it was reached at or announced.
    public init(rememberedPeer identity: IdentityPublicKey) { rawValue = "peer:" + identity.hex }
    public init(mdnsInstance: String) { rawValue = "mdns:" + mdnsInstance }

    public var description: String { rawValue }
}
