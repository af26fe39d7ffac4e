/// A resolved `_parley._tcp` instance on the LAN (never our own advertisement).
public struct DiscoveredPeer: Sendable, Equatable {
    /// The DNS-SD instance name, unescaped ("alice", "alice #2").
    public var instanceName: String
    /// The host the service runs on, as resolved by DNS-SD, without the trailing dot
    /// ("h1.local").
    public var hostTarget: String
    public var port: UInt16
    /// Decoded TXT record; keys are lower-case (DNS-SD keys are case-insensitive).
    public var txt: [String: String]
    /// Numeric IPv4 and IPv6 addresses of ``hostTarget`` from getaddrinfo (AF_UNSPEC),
    /// in the order the resolver prefers, without duplicates. IPv6 link-local addresses
    /// carry their zone ("fe80::1%eth0").
    public var addresses: [String]
    /// The interface the service was resolved on (if_nametoindex numbering).
    public var interfaceIndex: UInt32

    public init(
        instanceName: String, hostTarget: String, port: UInt16, txt: [String: String],
        addresses: [String], interfaceIndex: UInt32
    ) {
        self.instanceName = instanceName
        self.hostTarget = hostTarget
        self.port = port
        self.txt = txt
        self.addresses = addresses
        self.interfaceIndex = interfaceIndex
    }
}
