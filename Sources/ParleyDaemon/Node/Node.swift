import NIOConcurrencyHelpers
import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The driver of parleyd's node: it feeds events (connections, records, local requests,
/// timers) into the decisions of `ParleyNodeCore` and performs the actions they return
/// (store calls, writes, timers, events for the control side). It decides nothing itself.
///
/// - Sessions and presence: `SessionTable` (one session per pair, the tie-break, the
///   offline debounce); `Node+Sessions.swift`.
/// - Trust: `TrustDecision`; `Node+Trust.swift` records what it says.
/// - Dialling: `DialPlanner` (targets, backoff, spoof flags); `Node+Dialing.swift`.
/// - The outbox: `SendWindow` per session and `OutboxLedger`; `Node+Outbox.swift`.
/// - Rooms: `RoomDistribution`; `Node+Rooms.swift`.
/// - Local requests from the control socket: `Node+LocalAPI.swift`.
///
/// Everything runs on one event loop (`loop`), so the state needs no locks; entry points
/// from elsewhere hop onto the loop or assert they are on it. The clock and randomness
/// are injected, so the in-process tests drive the node's timers by hand.
final class Node: PeerConnectionDelegate, @unchecked Sendable {
    let loop: EventLoop
    let store: Store
    let clock: any NodeClock
    let random: any RandomSource
    private(set) var keys: NodeKeys
    /// Where the key files live (for key rotation).
    var stateDirectory: String?
    private(set) var card: Card {
        didSet {
            whoamiCache = nil
            clashCache = nil
        }
    }
    /// `node.whoami`'s answer, built once per card: it hex-encodes the card and prints the
    /// fingerprint, and is what clients call to check the daemon is there.
    private var whoamiCache: NodeWhoamiResult?
    /// Random per start; peers use it to tell our restart from a simultaneous dial.
    let bootID: [UInt8]
    let options: NodeOptions
    var log: Logger
    let networkKey: SecretBytes?
    let startedAt: MonotonicInstant

    // The decisions (ParleyNodeCore), fed by this driver.
    var sessions: SessionTable<ObjectIdentifier>
    var dialPlanner: DialPlanner
    var admission = AdmissionControl()
    var outbox = OutboxLedger()
    /// Stored usage per peer for the receive quota (Node+Quota.swift).
    var quotaCache = QuotaCache()
    /// When unused identities were last expired (Node+Sessions.swift).
    var lastIdentityExpiry: MonotonicInstant?

    /// Every open connection, handshaking or established, with what the node keeps about it.
    var links: [ObjectIdentifier: NodeLink] = [:]
    var redialTimers: [DialTargetKey: Scheduled<Void>] = [:]
    /// `peers.connect` with `wait`: who waits for the next outcome of a target (Node+ConnectWait).
    var dialWatchers: [DialTargetKey: [(token: Int, report: (DialOutcome) -> Void)]] = [:]
    var nextDialWatchToken = 0
    /// The TCP ports this node listens on, announced to every peer (`listenPorts` record).
    var listenPorts: [UInt16] = []
    /// The addresses the listeners are bound to ("host:port"), for our signed address record.
    var listenAddresses: [String] = []
    /// Address gossip among contacts (Node+Gossip.swift).
    var gossip: AddressGossip
    var ownRecordCache: SignedAddressRecord?
    /// Peers the local user has written to (address gossip's contacts, Node+Gossip.swift).
    var talkedWith = Set<IdentityPublicKey>()
    /// Dial-back probes answered, per requesting host (`GossipLimits.dialBack*`).
    var dialBackLimit = DialRateLimit(burst: GossipLimits.dialBackBurst, interval: GossipLimits.dialBackInterval)
    /// Our own dial-back probes waiting for their answer, by nonce.
    var dialBackWaiters: [UInt64: (timeout: Scheduled<Void>, report: (DialBackResult.Outcome?) -> Void)] = [:]
    var offlineTimers: [IdentityPublicKey: Scheduled<Void>] = [:]
    private var tick: RepeatedTask?
    var stopping = false
    private var observers: [ObjectIdentifier: WeakObserver] = [:]
    /// Security events (failed handshakes, spoofing): logged once per source per minute.
    let attackLog: RateLimitedLog
    /// Every pinned peer, cached for resolving names on each `send`; dropped whenever
    /// a peer record is written.
    var peerCache: [PeerRecord]? {
        didSet {
            peerIndex = nil
            clashCache = nil
        }
    }
    /// Name clashes among live peers (Node+Trust.swift), derived from `peerCache`.
    var clashCache: [IdentityPublicKey: NameClashes.Clash]?
    private var peerIndex: [String: PeerRecord]?
    /// Our own mDNS instance name (Avahi may rename it on a conflict).
    var ownInstanceName: String?
    /// Our own advertisement came back through our browser (`parley doctor`).
    var ownAdvertisementSeen = false
    /// Called at the end of every keepalive tick, on the loop: the daemon's periodic chores
    /// (the systemd status line) share the node's one timer instead of waking on their own.
    var onTick: (() -> Void)?
    /// Called after this node re-issued its card (the daemon re-advertises).
    var onCardChanged: ((Card) -> Void)?
    /// `read_receipts`: tell senders when the local user read their messages.
    var sendsReadReceipts = true
    /// Rooms: decoded operations and resolved state, loaded lazily (Node+Rooms.swift).
    var roomBook = RoomBook()
    /// False once the action outbox was found empty (and nothing was queued since): the
    /// pump then skips its query (Node+Conversation.swift).
    var actionOutboxMayHaveWork = true
    /// This node's status line, as last set (kept in the store's settings).
    var ownStatus = PresenceStatus.none
    /// Each connected peer's latest status line (presence: forgotten when it goes offline).
    var peerStatuses: [IdentityPublicKey: PresenceStatus] = [:]
    /// At most one shown status change per peer per second (a flood costs no more).
    var statusThrottle = StatusThrottle<IdentityPublicKey>()
    /// When the words of deleted messages are purged from the search index.
    var erasurePurge = ErasurePurgeSchedule()
    /// File transfers in memory (Files/Node+Files*.swift).
    var files = FileBook()
    /// Refused offers listed per sender in time (Files/Node+FileReceiving.swift).
    var refusalRecordLimit = RefusalRecordLimit()

    var myIdentityKey: IdentityPublicKey { keys.identity.publicKey }
    var myIdentity: String { keys.identityHex }
    var fingerprint: Fingerprint { Fingerprint(keys.identity.publicKey) }

    init(
        loop: EventLoop, store: Store, keys: NodeKeys, card: Card, options: NodeOptions, log: Logger,
        networkKey: SecretBytes?, clock: any NodeClock = SystemNodeClock(), random: any RandomSource = SodiumRandom()
    ) {
        self.loop = loop
        self.store = store
        self.keys = keys
        self.card = card
        self.bootID = Sodium.randomBytes(HandshakePayload.bootIDLength)
        self.options = options
        self.log = log
        self.networkKey = networkKey
        self.clock = clock
        self.random = random
        self.startedAt = clock.monotonicNow()
        self.sessions = SessionTable(me: keys.identity.publicKey, maxSessions: options.maxSessions)
        self.dialPlanner = DialPlanner(backoff: options.redial)
        self.gossip = AddressGossip(own: keys.identity.publicKey)
        self.attackLog = RateLimitedLog(logger: log, level: .warning, interval: .seconds(60))
    }

    /// Unix milliseconds now, for code outside the node (which has its own injected clock).
    static func nowMs() -> Int64 { SystemNodeClock.wallMilliseconds() }

    var nowMs: Int64 { clock.wallMilliseconds() }

    /// Whole seconds since this node started, on the monotonic clock.
    var uptimeSeconds: Int { Int((clock.monotonicNow() - startedAt).components.seconds) }

    static func fingerprint(ofHex hex: String) -> String {
        if let known = fingerprintCache.withLockedValue({ $0[hex] }) { return known }
        guard let b = Sodium.fromHex(hex), let k = try? IdentityPublicKey(bytes: b) else { return hex }
        let printed = Fingerprint(k).description
        fingerprintCache.withLockedValue { cache in
            if cache.count >= fingerprintCacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[hex] = printed
        }
        return printed
    }

    /// Fingerprints printed so far, by identity hex: every message event names its sender
    /// and recipient, and hashing and base32-encoding the key each time showed in profiles.
    /// A pure function of the key, so a cache cannot go stale; bounded for hostile churn.
    private static let fingerprintCache = NIOLockedValueBox<[String: String]>([:])
    private static let fingerprintCacheLimit = 4_096

    // MARK: Lifecycle

    func start() {
        loop.preconditionInEventLoop()
        loadOwnStatus()
        let period = options.keepalive.tickInterval.timeAmount
        tick = loop.scheduleRepeatedTask(initialDelay: period, delay: period) { [weak self] _ in
            self?.keepaliveTick()
        }
        restoreAddressRecords()
        do { try reResolveStoredRooms() } catch {
            log.error("rooms not resolved again at start", ["error": "\(error)"])
        }
        redialRememberedPeers()
    }

    /// Says goodbye to every peer and stops dialling.
    func stop() {
        loop.preconditionInEventLoop()
        stopping = true
        tick?.cancel()
        tick = nil
        perform(dialPlanner.stop())
        for link in links.values { link.connection.close(reason: .normal, text: "shutting down") }
        // A deleted text's words must not outlive the run in the search index.
        purgeSearchIndexIfOwed()
    }

    func addObserver(_ o: NodeObserver) { observers[ObjectIdentifier(o)] = WeakObserver(o) }
    func removeObserver(_ o: NodeObserver) { observers[ObjectIdentifier(o)] = nil }

    func emit(_ e: NodeEvent) {
        for (k, w) in observers {
            guard let o = w.value else {
                observers[k] = nil
                continue
            }
            o.node(self, didEmit: e)
        }
    }

    /// The journal rows a message transaction should write for `method` events: nil when no
    /// observer journals them (`InTransactionJournal`), which first stores what it holds.
    func messageJournal(_ method: String) -> MessageJournal? {
        var journaled = false
        for w in observers.values {
            guard let j = w.value as? InTransactionJournal else { continue }
            j.settleBeforeMessageTransaction()
            journaled = true
        }
        return journaled ? try? MessageJournal(method: method, at: Self.nowMs()) : nil
    }

    // MARK: Peer records (cached)

    func allPeers() throws(StoreError) -> [PeerRecord] {
        if let peerCache { return peerCache }
        let all = try store.peers()
        peerCache = all
        return all
    }

    /// A pinned peer by identity hex, from the cache.
    func peerRecord(_ identity: String) -> PeerRecord? {
        if peerIndex == nil, let all = try? allPeers() {
            peerIndex = Dictionary(all.map { ($0.identity, $0) }, uniquingKeysWith: { a, _ in a })
        }
        return peerIndex?[identity]
    }

    func upsertPeer(_ rec: PeerRecord) throws(StoreError) {
        peerCache = nil
        try store.upsertPeer(rec)
    }

    func setTrust(identity: String, _ trust: TrustState) throws(StoreError) {
        peerCache = nil
        try store.setTrust(identity: identity, trust)
    }

    /// Re-issues our card (new name or Noise key) with a higher sequence and
    /// sends it to every peer online now; the others get it in their next handshake.
    func reissueCard(displayName: String, hostName: String) throws {
        let next = try Card.issue(
            identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
            displayName: displayName, hostName: hostName,
            issuedAt: UInt64(max(0, nowMs / 1000)),
            sequence: OwnCard.nextSequence(after: card.sequence, now: UInt64(max(0, nowMs / 1000))))
        try store.setSetting(OwnCard.settingKey, Sodium.hex(next.encoded()))
        card = next
        for peer in sessions.peers { activeConnection(for: peer)?.send(.cardUpdate(next.encoded())) }
        onCardChanged?(next)
        log.info("card re-issued", ["name": displayName, "sequence": "\(next.sequence)"])
    }

    /// `parley rotate-key`: a new Noise static key on disk, then a re-issued card.
    /// New handshakes use the new key at once; peers refuse the old card from then on
    /// (its sequence is lower), so nobody encrypts to the old key after seeing the new.
    func rotateNoiseKey() throws -> Int {
        guard let dir = stateDirectory else { throw NodeError.noStateDirectory }
        let fresh = NoiseStaticKeyPair.generate()
        try KeyFiles.writeNoiseStatic(fresh, stateDirectory: dir)
        keys = NodeKeys(identity: keys.identity, noiseStatic: fresh)
        try reissueCard(displayName: card.displayName, hostName: card.hostName)
        log.info("Noise static key rotated", ["sequence": "\(card.sequence)"])
        return sessions.count
    }

    /// This node as `node.whoami` describes it.
    func whoami() -> NodeWhoamiResult {
        if let whoamiCache { return whoamiCache }
        let c = card
        let result = NodeWhoamiResult(
            name: c.displayName, host: c.hostName, fingerprint: c.fingerprint.description,
            identityKey: c.identityKey.hex, noiseKey: c.noiseKey.hex,
            card: Sodium.hex(c.encoded()), cardSequence: Int(clamping: c.sequence))
        whoamiCache = result
        return result
    }
}

private struct WeakObserver {
    weak var value: NodeObserver?
    init(_ v: NodeObserver) { value = v }
}

extension IdentityPublicKey {
    /// The key from its lowercase hex (as the store keeps it); nil for anything else.
    init?(hex: String) {
        guard let bytes = Sodium.fromHex(hex), let key = try? IdentityPublicKey(bytes: bytes) else { return nil }
        self = key
    }
}

extension String {
    /// "10.0.0.1:7744" -> "10.0.0.1", "[::1]:7744" -> "::1" (for per-source limits).
    var hostPart: String {
        if hasPrefix("["), let end = firstIndex(of: "]") { return String(self[index(after: startIndex)..<end]) }
        if let colon = lastIndex(of: ":") { return String(self[..<colon]) }
        return self
    }
}
