import NIOConcurrencyHelpers
import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// parleyd's node: it routes events (connections, records, local requests, timers) to
/// the per-concern drivers and the decisions of `ParleyNodeCore`, and performs the actions
/// they return (store calls, writes, timers, events for the control side). It decides
/// nothing itself. docs/ARCHITECTURE.md, "Drivers".
///
/// - Connections, sessions and presence: `SessionDriver` (the one performer of
///   `SessionTable.Action` and `EstablishedSessionDecision.Action`); `Node+Sessions.swift`
///   routes the connection events to it and is its `SessionHost`.
/// - Pinned peers, the names that find them, their standing: `PeerDirectory`. Trust:
///   `TrustDriver` (Drivers/Trust/: the handshake's trust outcome, card updates, the
///   person's trust requests; `TrustDecision` and friends decide); `Node+Trust.swift` and
///   Node+LocalAPI.swift route to it, and Node is its host.
/// - Dialling and the address book: `DialDriver` (`DialPlanner`); `Node+Dialing.swift`
///   opens its connections.
/// - Our reachability, address gossip, dial-back, doctor's facts: `GossipDriver`
///   (Drivers/Gossip/); `Node+Gossip.swift` routes to it and is its `GossipHost`.
/// - The one-to-one message path: `DirectMessageDriver` (send admission, the pump, received
///   chats, acknowledgements, outbox counts; `SendWindow` per session in `NodeLink`);
///   `Node+Outbox.swift` routes to it and is its host. `MessageDriver` holds
///   `ConversationDriver` (edits, deletes, reactions and their outbox, read receipts, our
///   status line) and `ReceiveQuotaDriver` (the receive quota's counts and verdicts,
///   peers' refusals), and the search-index purge; `Node+Conversation.swift`,
///   `Node+ReadReceipts.swift` and `Node+Quota.swift` route to them and are their host.
/// - Files: `FileDriver` (Drivers/Files/); `Files/Node+File*.swift` route to it and are its host.
/// - Who hears from the node: `NodeObservers`.
/// - Rooms: `RoomDriver` (operations, resolution, room messages, cards; `RoomDistribution`
///   and `RoomAdmission` decide); `Node+Rooms.swift` routes to it and is its host. Room
///   sync: `RoomSyncDriver` (the one performer of `RoomSyncStateMachine.Action`), held by
///   `RoomBook`; `Node+RoomSync.swift` routes to it and is its host.
/// - Local requests from the control socket: `Node+LocalAPI.swift`.
///
/// Everything runs on one event loop (`loop`), so the state needs no locks; entry points
/// from elsewhere hop onto the loop or assert they are on it. The clock and randomness
/// are injected, so the in-process tests drive the node's timers by hand.
final class Node: PeerConnectionDelegate, @unchecked Sendable {
    let loop: EventLoop
    let store: Store
    let options: NodeOptions
    var log: Logger
    /// Security events (failed handshakes, spoofing): logged once per source per minute.
    let attackLog: RateLimitedLog

    // The per-concern drivers, each owning its state (docs/ARCHITECTURE.md, "Drivers").
    /// Who this node is: keys, card, boot id, network key, when it started.
    let ownIdentity: OwnIdentity
    /// Connections, sessions and presence, the keepalive tick, stopping; the one performer
    /// of `SessionTable.Action`.
    let sessionDriver: SessionDriver
    /// Trust on first use and the person's trust decisions; it holds the pinned peers,
    /// cached, and the decisions about them (names, standing, clashes): `peerDirectory`.
    let trustDriver: TrustDriver
    /// Our reachability (listeners, own address record, mDNS self-sighting), address
    /// gossip among contacts and the dial-back probe.
    let gossipDriver: GossipDriver
    /// Dial targets, redial timers and dial watchers; the one performer of `DialPlanner.Action`.
    let dialDriver: DialDriver
    /// File transfers in memory (`FileBook`), the pump queue, the refusal bound.
    let fileDriver: FileDriver
    /// The one-to-one message path: local sends (`SendAdmission`), the pump, received
    /// chats, acknowledgements, and the outbox's counts.
    let directMessages: DirectMessageDriver<Node>
    /// The message path's other drivers: conversation records (`ConversationDriver`), the
    /// receive quota (`ReceiveQuotaDriver`), the search-index purge.
    let messageDriver: MessageDriver
    /// Rooms: their operations and resolved state, waiting operations, held messages, room
    /// cards (`RoomBook`); the local room API and room traffic (Node+Rooms.swift routes).
    let rooms: RoomDriver<Node>
    /// Who hears from the node: event observers and the daemon's per-tick chore.
    let observers = NodeObservers()

    /// The pinned peers, cached, and the decisions about them (names, standing, clashes).
    var peerDirectory: PeerDirectory { trustDriver.directory }
    /// Time for every decision (injected: a mock clock in the in-process tests).
    var clock: any NodeClock { sessionDriver.clock }
    var myIdentityKey: IdentityPublicKey { ownIdentity.keys.identity.publicKey }
    var myIdentity: String { ownIdentity.keys.identityHex }
    var fingerprint: Fingerprint { Fingerprint(ownIdentity.keys.identity.publicKey) }

    init(
        loop: EventLoop, store: Store, keys: NodeKeys, card: Card, options: NodeOptions, log: Logger,
        networkKey: SecretBytes?, clock: any NodeClock = SystemNodeClock(), random: any RandomSource = SodiumRandom()
    ) {
        self.loop = loop
        self.store = store
        self.ownIdentity = OwnIdentity(keys: keys, card: card, networkKey: networkKey, store: store, clock: clock)
        self.options = options
        self.log = log
        let attackLog = RateLimitedLog(logger: log, level: .warning, interval: .seconds(60))
        self.attackLog = attackLog
        let directory = PeerDirectory(store: store, myName: card.displayName)
        self.trustDriver = TrustDriver(
            store: store, directory: directory, me: keys.identity.publicKey, newIdentities: options.newIdentities,
            clock: clock, log: log)
        self.dialDriver = DialDriver(
            planner: DialPlanner(backoff: options.redial), loop: loop, clock: clock, random: random, store: store,
            log: log, attackLog: attackLog)
        self.sessionDriver = SessionDriver(
            table: SessionTable(me: keys.identity.publicKey, maxSessions: options.maxSessions),
            loop: loop, clock: clock, log: log, attackLog: attackLog, dial: dialDriver, directory: directory)
        self.fileDriver = FileDriver(store: store, clock: clock)
        self.gossipDriver = GossipDriver(
            identity: keys.identity, store: store, directory: directory, loop: loop, clock: clock, log: log,
            dial: dialDriver, sessions: sessionDriver)
        self.messageDriver = MessageDriver(
            store: store, directory: directory, loop: loop, clock: clock, log: log, quotaLimits: options.quota,
            attackLog: attackLog)
        self.directMessages = DirectMessageDriver(
            store: store, me: keys.identity.publicKey, loop: loop, clock: clock, log: log)
        self.rooms = RoomDriver(
            store: store, identity: keys.identity, newIdentities: options.newIdentities, loop: loop, clock: clock,
            log: log,
            sync: RoomSyncDriver(store: store, identity: keys.identity, clock: clock, log: log, attackLog: attackLog))
        sessionDriver.emit = { [unowned self] in self.emit($0) }
        trustDriver.host = self
        sessionDriver.host = self
        gossipDriver.host = self
        directMessages.host = self
        fileDriver.host = self
        messageDriver.conversation.host = self
        messageDriver.quota.host = self
        rooms.host = self
        rooms.book.sync.host = self
        dialDriver.open = { [unowned self] in self.openConnection($0, $1, expectedFingerprint: $2) }
        dialDriver.sessions = { [unowned self] in self.sessionView }
    }

    /// Unix milliseconds now, for code outside the node (which has its own injected clock).
    static func nowMs() -> Int64 { SystemNodeClock.wallMilliseconds() }

    var nowMs: Int64 { clock.wallMilliseconds() }

    /// A message party as the control protocol prints it: a peer's fingerprint, a room's id.
    static func fingerprint(of party: MessageParty) -> String {
        switch party {
        case .peer(let key): fingerprint(of: key)
        case .room(let id): id.hex
        }
    }

    /// A key's fingerprint as people read it.
    static func fingerprint(of key: IdentityPublicKey) -> String {
        if let known = fingerprintCache.withLockedValue({ $0[key] }) { return known }
        let printed = Fingerprint(key).description
        fingerprintCache.withLockedValue { cache in
            if cache.count >= fingerprintCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[key] = printed
        }
        return printed
    }

    /// Fingerprints printed so far, by identity: every message event names its sender
    /// and recipient, and hashing and base32-encoding the key each time showed in profiles.
    /// A pure function of the key, so a cache cannot go stale; bounded for hostile churn.
    private static let fingerprintCache = NIOLockedValueBox<[IdentityPublicKey: String]>([:])
    private static let fingerprintCacheLimit = 4_096

    // MARK: Lifecycle

    func start() {
        loop.preconditionInEventLoop()
        loadOwnStatus()
        sessionDriver.startTicking(every: options.keepalive.tickInterval) { [weak self] in self?.keepaliveTick() }
        restoreAddressRecords()
        do { try reResolveStoredRooms() } catch {
            log.error("rooms not resolved again at start", ["error": "\(error)"])
        }
        redialRememberedPeers()
    }

    /// Says goodbye to every peer and stops dialling.
    func stop() {
        loop.preconditionInEventLoop()
        // Acknowledged deliveries still waiting for a transaction are written now.
        directMessages.flushDeliveryMarks(pumping: false)
        sessionDriver.stop()
        dialDriver.perform(dialDriver.planner.stop())
        for link in sessionDriver.links.values { link.connection.close(reason: .normal, text: "shutting down") }
        // A deleted text's words must not outlive the run in the search index.
        messageDriver.purgeIfOwed()
    }

    func addObserver(_ o: NodeObserver) { observers.add(o) }
    func removeObserver(_ o: NodeObserver) { observers.remove(o) }

    func emit(_ e: NodeEvent) { observers.emit(e, from: self) }

    /// The journal rows a message transaction should write for `method` events: nil when no
    /// observer journals them (`InTransactionJournal`), which first stores what it holds.
    func messageJournal(_ method: String) -> MessageJournal? { observers.messageJournal(method, at: Self.nowMs()) }

    // MARK: Peer records (cached)

    func allPeers() throws(StoreError) -> [PeerRecord] {
        try peerDirectory.peers()  // `PeerDirectory` keeps them until a record is written
    }

    /// A pinned peer by identity, from the cache.
    func peerRecord(_ identity: IdentityPublicKey) -> PeerRecord? { peerDirectory.peer(identity) }

    func upsertPeer(_ rec: PeerRecord) throws(StoreError) { try peerDirectory.upsert(rec) }

    func setTrust(identity: IdentityPublicKey, _ trust: TrustState) throws(StoreError) {
        try peerDirectory.setTrust(identity: identity, trust)
    }

    /// Re-issues our card (new name or Noise key) with a higher sequence and
    /// sends it to every peer online now; the others get it in their next handshake.
    func reissueCard(displayName: String, hostName: String) throws {
        let next = try ownIdentity.reissue(displayName: displayName, hostName: hostName)
        peerDirectory.myName = next.displayName
        for peer in sessionDriver.table.peers { activeConnection(for: peer)?.send(.cardUpdate(next.encoded())) }
        ownIdentity.onCardChanged?(next)
        log.info("card re-issued", ["name": displayName, "sequence": "\(next.sequence)"])
    }

    /// `parley rotate-key`: a new Noise static key on disk, then a re-issued card.
    /// New handshakes use the new key at once; peers refuse the old card from then on
    /// (its sequence is lower), so nobody encrypts to the old key after seeing the new.
    func rotateNoiseKey() throws -> Int {
        try ownIdentity.rotateNoiseKey()
        let card = ownIdentity.card
        try reissueCard(displayName: card.displayName, hostName: card.hostName)
        log.info("Noise static key rotated", ["sequence": "\(ownIdentity.card.sequence)"])
        return sessionDriver.table.count
    }

    /// This node as `node.whoami` describes it.
    func whoami() -> NodeWhoamiResult { ownIdentity.whoami() }
}

extension String {
    /// "10.0.0.1:7744" -> "10.0.0.1", "[::1]:7744" -> "::1" (for per-source limits).
    var hostPart: String {
        if hasPrefix("["), let end = firstIndex(of: "]") { return String(self[index(after: startIndex)..<end]) }
        if let colon = lastIndex(of: ":") { return String(self[..<colon]) }
        return self
    }
}
