import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The node's view of its drivers' state, under the names the node's extensions used
/// before the state moved into the drivers (so the move does not touch every caller).
/// Each forwards to the one owner; nothing is stored here.
extension Node {
    /// The session table (`SessionDriver`).
    var sessions: SessionTable<ObjectIdentifier> {
        _read { yield sessionDriver.table }
        _modify { yield &sessionDriver.table }
    }

    /// Every open connection (`SessionDriver`).
    var links: [ObjectIdentifier: NodeLink] {
        _read { yield sessionDriver.links }
        _modify { yield &sessionDriver.links }
    }

    /// Each online peer's latest status line (`SessionDriver`).
    var peerStatuses: [IdentityPublicKey: PresenceStatus] { sessionDriver.statuses }

    /// The dial targets' decisions (`DialDriver`).
    var dialPlanner: DialPlanner {
        _read { yield dialDriver.planner }
        _modify { yield &dialDriver.planner }
    }

    /// Address gossip's decisions (`GossipDriver`).
    var gossip: AddressGossip {
        _read { yield gossipDriver.gossip }
        _modify { yield &gossipDriver.gossip }
    }

    /// The TCP ports this node listens on, announced to every peer (`GossipDriver`).
    var listenPorts: [UInt16] {
        get { gossipDriver.listenPorts }
        set { gossipDriver.listenPorts = newValue }
    }

    /// The addresses the listeners are bound to (`GossipDriver`).
    var listenAddresses: [String] {
        get { gossipDriver.listenAddresses }
        set { gossipDriver.listenAddresses = newValue }
    }

    /// Our own mDNS instance name (`GossipDriver`).
    var ownInstanceName: String? {
        get { gossipDriver.ownInstanceName }
        set { gossipDriver.ownInstanceName = newValue }
    }

    /// Our own advertisement came back through our browser (`GossipDriver`).
    var ownAdvertisementSeen: Bool {
        get { gossipDriver.ownAdvertisementSeen }
        set { gossipDriver.ownAdvertisementSeen = newValue }
    }

    /// This node's keys (`OwnIdentity`).
    var keys: NodeKeys { ownIdentity.keys }

    /// This node's current card (`OwnIdentity`).
    var card: Card { ownIdentity.card }

    /// Random per start (`OwnIdentity`).
    var bootID: [UInt8] { ownIdentity.bootID }

    /// The network key, if any (`OwnIdentity`).
    var networkKey: SecretBytes? { ownIdentity.networkKey }

    /// Where the key files live (`OwnIdentity`).
    var stateDirectory: String? {
        get { ownIdentity.stateDirectory }
        set { ownIdentity.stateDirectory = newValue }
    }

    /// Called after this node re-issued its card (`OwnIdentity`).
    var onCardChanged: ((Card) -> Void)? {
        get { ownIdentity.onCardChanged }
        set { ownIdentity.onCardChanged = newValue }
    }

    /// File transfers in memory (`FileDriver`).
    var files: FileBook {
        _read { yield fileDriver.book }
        _modify { yield &fileDriver.book }
    }

    /// This node's own status line (`SessionDriver`).
    var ownStatus: PresenceStatus {
        get { sessionDriver.ownStatus }
        set { sessionDriver.ownStatus = newValue }
    }
}
