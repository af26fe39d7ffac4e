/// What this node publishes on the LAN: one DNS-SD service instance of type `_parley._tcp`.
///
/// TXT keys Parley uses (the daemon's PROTOCOL.md is the normative description; keep the
/// record small, it travels in every mDNS response):
/// - `v`:  protocol version, currently "1" (``ParleyTXT/protocolVersion``).
/// - `fp`: the node's identity fingerprint, compact form (32 characters). A hint for the
///         peer list only: identity is proven by the Noise handshake and signed card,
///         never by anything in mDNS.
/// - `id`: optional, a short node id.
public struct ServiceAdvertisement: Sendable, Equatable {
    /// The DNS-SD service type every Parley node registers and browses.
    public static let serviceType = "_parley._tcp"
    /// RFC 6763 §4.1.1: an instance name is one DNS label, at most 63 bytes of UTF-8.
    /// Longer names are cut at a character boundary when registering.
    public static let maxInstanceNameBytes = 63

    /// The name to register under. Empty means "use the host name" (DNS-SD convention).
    /// avahi may register a different name on a conflict ("name #2"): the actual name
    /// is reported by ``DiscoveryEvent/registered(instanceName:)``.
    public var instanceName: String
    public var port: UInt16
    /// Entries that cannot be encoded (see ``TXTRecord/encode(_:)``) are left out.
    public var txt: [String: String]

    public init(instanceName: String, port: UInt16, txt: [String: String] = [:]) {
        self.instanceName = instanceName
        self.port = port
        self.txt = txt
    }
}

/// The TXT keys and values of Parley's advertisement (see ``ServiceAdvertisement``).
public enum ParleyTXT {
    /// Protocol version key; value ``protocolVersion``.
    public static let versionKey = "v"
    /// The node's compact identity fingerprint (32 characters).
    public static let fingerprintKey = "fp"
    /// Optional short node id.
    public static let idKey = "id"
    /// Private presence (``PresenceToken`` in ParleyCore): the nonce and the token, in
    /// lowercase hex. Nodes that advertise these carry no `fp` and no name.
    public static let nonceKey = "n"
    public static let tokenKey = "t"
    /// The instance name of a node with private presence: this prefix and random letters,
    /// new with every rotation.
    public static let anonymousInstancePrefix = "parley-"
    /// The protocol version this build speaks.
    public static let protocolVersion = "1"
}
