/// `doctor.report`: what the daemon knows about discovery and reachability, for
/// `parley doctor` (docs/CONTROL.md). With `dialBack`, it first asks one connected peer to
/// open a TCP connection back to our listening port (docs/PROTOCOL.md, dialBackRequest)
/// and waits for the answer, at most `ControlLimits.doctorDialBackTimeoutMs`.
public struct DoctorReportParams: ControlCallParams {
    public typealias ResultType = DoctorReportResult
    public static let method = ControlMethod.doctorReport
    public static let fieldNames = ["dialBack"]
    public var dialBack: Bool?

    public init(dialBack: Bool? = nil) { self.dialBack = dialBack }
}

public struct DoctorReportResult: Codable, Sendable, Hashable {
    /// Addresses the peer listener is bound to, as `host:port`.
    public var listen: [String]
    public var mdns: MDNSState
    /// Our own advertisement came back through our own browser (avahi publishes and
    /// resolves for us).
    public var ownAdvertisementSeen: Bool
    /// Advertisements of other Parley nodes currently known (dial targets from mDNS).
    public var advertisementsSeen: Int
    /// Of those, the ones dialled without a session (attempts failed): adverts arrive but
    /// TCP does not (client isolation, a firewall).
    public var advertisementsUnreachable: Int
    public var peersOnline: Int
    /// Configured peers (`--peer`, the configuration).
    public var staticPeers: Int
    /// The dial-back probe, when asked for.
    public var dialBack: DoctorDialBack?

    public init(
        listen: [String], mdns: MDNSState, ownAdvertisementSeen: Bool, advertisementsSeen: Int,
        advertisementsUnreachable: Int, peersOnline: Int, staticPeers: Int, dialBack: DoctorDialBack?
    ) {
        self.listen = listen
        self.mdns = mdns
        self.ownAdvertisementSeen = ownAdvertisementSeen
        self.advertisementsSeen = advertisementsSeen
        self.advertisementsUnreachable = advertisementsUnreachable
        self.peersOnline = peersOnline
        self.staticPeers = staticPeers
        self.dialBack = dialBack
    }
}

public struct DoctorDialBack: Codable, Sendable, Hashable {
    public enum Outcome: String, Codable, Sendable {
        /// The peer reached our port.
        case connected
        /// The peer tried and could not connect: the port is blocked somewhere.
        case failed
        /// The peer's rate limit (one probe per minute).
        case refused
        /// No answer in time.
        case timeout
        /// No connected peer the person verified understands the probe (or none is
        /// connected): strangers are not asked.
        case noPeer
    }
    /// The peer asked (its name), nil with `noPeer`. Only a peer the person verified is
    /// asked: its answer becomes advice.
    public var peer: String?
    /// The asked peer's fingerprint, so the answer says whose it is (nil with `noPeer`).
    public var fingerprint: String?
    public var outcome: Outcome

    public init(peer: String?, fingerprint: String? = nil, outcome: Outcome) {
        self.peer = peer
        self.fingerprint = fingerprint
        self.outcome = outcome
    }
}

/// `doctor.peer`: what the daemon knows about reaching one peer, for `parley doctor PEER`
/// (docs/CONTROL.md): the peer, whether its mDNS advertisement is seen, the addresses it
/// is dialled at and how the dialling goes. Read only: nothing is dialled for it.
public struct DoctorPeerParams: ControlCallParams {
    public typealias ResultType = DoctorPeerResult
    public static let method = ControlMethod.doctorPeer
    public static let fieldNames = ["peer"]
    /// Display name, nickname or fingerprint prefix, as for `messages.send`.
    public var peer: String

    public init(peer: String) { self.peer = peer }

    public func validate() throws(JSONRPCError) { try ParamCheck.peerSelector(peer, field: "peer") }
}

public struct DoctorPeerResult: Codable, Sendable, Hashable {
    public var peer: PeerInfo
    /// This node's mDNS state (an advertisement can only be seen with `on`).
    public var mdns: MDNSState
    /// An mDNS advertisement of this peer is currently known (claiming its fingerprint, or
    /// proved by a session).
    public var advertised: Bool
    /// How the daemon dials the peer: one entry per way it knows (advertisement,
    /// configuration, remembered from earlier sessions). Empty: no address is known.
    public var dialing: [DoctorDialTarget]

    public init(peer: PeerInfo, mdns: MDNSState, advertised: Bool, dialing: [DoctorDialTarget]) {
        self.peer = peer
        self.mdns = mdns
        self.advertised = advertised
        self.dialing = dialing
    }
}

public struct DoctorDialTarget: Codable, Sendable, Hashable {
    /// `discovered` (mDNS), `configured` (`peers` in the configuration, `--peer`,
    /// `parley connect`) or `remembered` (where earlier sessions reached it).
    public var source: String
    /// `host:port` candidates, tried in turn.
    public var addresses: [String]
    /// Dial attempts that failed since the last session (0 while none failed).
    public var failures: Int
    /// A connection attempt is under way.
    public var connecting: Bool
    /// The advertisement claimed this peer's fingerprint but its handshake proved another
    /// key: not dialled again until it changes.
    public var spoofed: Bool

    public init(source: String, addresses: [String], failures: Int, connecting: Bool, spoofed: Bool) {
        self.source = source
        self.addresses = addresses
        self.failures = failures
        self.connecting = connecting
        self.spoofed = spoofed
    }
}
