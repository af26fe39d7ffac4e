import ParleyControlProtocol
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import ParleyCore
import ParleyStore
#if canImport(Glibc)
import Glibc
#endif

/// The heart of parleyd: sessions with other nodes, trust on first use, and the
/// durable outbox. Everything here runs on one event loop (`loop`), so the state
/// needs no locks; public entry points hop onto the loop or assert they are on it.
final class Node: PeerConnectionDelegate, @unchecked Sendable {
    let loop: EventLoop
    let store: Store
    private(set) var keys: NodeKeys
    /// Where the key files live (for key rotation).
    var stateDirectory: String?
    private(set) var card: Card { didSet { whoamiCache = nil } }
    /// `node.whoami`'s answer, built once per card: it hex-encodes the card and prints the
    /// fingerprint, and is what clients call to check the daemon is there.
    private var whoamiCache: NodeWhoamiResult?
    /// Random per start; peers use it to tell our restart from a simultaneous dial.
    let bootID: [UInt8]
    let options: NodeOptions
    var log: Logger
    let networkKey: SecretBytes?
    let startedAt = NIODeadline.now()

    /// The one live session per peer identity (hex).
    private(set) var sessions: [String: PeerConnection] = [:]
    /// Every open connection, handshaking or established.
    private var connections: [ObjectIdentifier: PeerConnection] = [:]
    private var observers: [ObjectIdentifier: WeakObserver] = [:]
    private var dialTargets: [String: DialTarget] = [:]
    private var tick: RepeatedTask?
    private var stopping = false
    /// Security events (failed handshakes, spoofing): logged once per source per minute.
    let attackLog: RateLimitedLog
    private var admission = AdmissionControl()
    /// Offline notices held back briefly after a duplicate-session close, so the
    /// simultaneous-dial tie-break does not flap presence.
    private var pendingOffline: [String: Scheduled<Void>] = [:]
    /// Every pinned peer, cached for resolving names on each `send`; dropped whenever
    /// a peer record is written.
    private var peerCache: [PeerRecord]? { didSet { peerIndex = nil } }
    private var peerIndex: [String: PeerRecord]?
    /// Undelivered messages per recipient, loaded lazily from the store.
    private var queuedCounts: [String: Int]?
    /// The highest sequence queued to each peer since this run started (sequences only
    /// grow, so the newest message queued has it). A pump whose session already sent
    /// through it skips the outbox query: most pumps (after every acknowledgement) have
    /// nothing new. Absent = unknown (a backlog from an earlier run): the pump queries.
    private var newestQueued: [String: Int64] = [:]
    /// Our own mDNS instance name (Avahi may rename it on a conflict).
    var ownInstanceName: String?
    /// Called after this node re-issued its card (the daemon re-advertises).
    var onCardChanged: ((Card) -> Void)?
    /// `read_receipts`: tell senders when the local user read their messages.
    var sendsReadReceipts = true
    /// Rooms: decoded operations and resolved state, loaded lazily (Node+Rooms.swift).
    var roomBook = RoomBook()

    var myIdentity: String { keys.identity.publicKey.hex }
    var fingerprint: Fingerprint { Fingerprint(keys.identity.publicKey) }

    init(loop: EventLoop, store: Store, keys: NodeKeys, card: Card, options: NodeOptions,
         log: Logger, networkKey: SecretBytes?) {
        self.loop = loop
        self.store = store
        self.keys = keys
        self.card = card
        self.bootID = Sodium.randomBytes(HandshakePayload.bootIDLength)
        self.options = options
        self.log = log
        self.networkKey = networkKey
        self.attackLog = RateLimitedLog(logger: log, level: .warning, interval: .seconds(60))
    }

    static func nowMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

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
        let period = TimeAmount.nanoseconds(max(options.pingInterval.nanoseconds / 5, 100_000_000))
        tick = loop.scheduleRepeatedTask(initialDelay: period, delay: period) { [weak self] _ in
            self?.keepalive()
        }
    }

    /// Says goodbye to every peer and stops dialling.
    func stop() {
        loop.preconditionInEventLoop()
        stopping = true
        tick?.cancel()
        tick = nil
        for (_, t) in dialTargets { t.timer?.cancel() }
        dialTargets.removeAll()
        for c in connections.values { c.close(reason: .normal, text: "shutting down") }
    }

    func addObserver(_ o: NodeObserver) { observers[ObjectIdentifier(o)] = WeakObserver(o) }
    func removeObserver(_ o: NodeObserver) { observers[ObjectIdentifier(o)] = nil }

    func emit(_ e: NodeEvent) {
        for (k, w) in observers {
            guard let o = w.value else { observers[k] = nil; continue }
            o.node(self, didEmit: e)
        }
    }

    // MARK: Connections

    /// Admission of a new inbound TCP connection (before any byte is read).
    func admitInbound(remote: SocketAddress?) -> Bool {
        loop.preconditionInEventLoop()
        guard !stopping else { return false }
        let source = remote?.ipAddress ?? "?"
        let verdict = admission.admit(source: source, now: .now())
        guard verdict == .accept else {
            attackLog.log(key: "admit:" + source, "refusing inbound connections", ["source": source, "why": "\(verdict)"])
            return false
        }
        return true
    }

    private func releaseAdmission(_ conn: PeerConnection) {
        guard conn.direction == .inbound, !conn.admissionReleased else { return }
        conn.admissionReleased = true
        admission.handshakeEnded(source: conn.remoteAddress.hostPart)
    }

    /// A handler for a new TCP connection in either direction.
    func makeConnection(direction: PeerConnection.Direction, dialedAddress: String?) -> PeerConnection {
        // The handshake is built when the connection becomes active, so it uses the
        // card and keys current then (a rotation or rename in between is honoured).
        let conn = PeerConnection(direction: direction, dialedAddress: dialedAddress,
                                  handshakeTimeout: options.handshakeTimeout) { [unowned self] in
            SessionHandshake(role: direction == .outbound ? .initiator : .responder,
                             localCard: self.card, staticKey: self.keys.noiseStatic, bootID: self.bootID,
                             presharedKey: self.networkKey, now: UInt64(max(0, Node.nowMs() / 1000)))
        }
        conn.delegate = self
        connections[ObjectIdentifier(conn)] = conn
        return conn
    }

    /// Adds a static peer: dialled now and re-dialled with backoff whenever no
    /// session to it is up.
    func addStaticPeer(_ address: HostPort) {
        loop.preconditionInEventLoop()
        let key = address.description
        guard dialTargets[key] == nil else { dial(key); return }
        dialTargets[key] = DialTarget(candidates: [address], source: .configured)
        dial(key)
    }

    /// A target found by discovery: several candidate addresses, one session.
    func addDiscoveredTarget(key: String, candidates: [HostPort], fingerprintHint: String?) {
        if var t = dialTargets[key] {
            if t.candidates != candidates || t.fingerprintHint != fingerprintHint { t.spoofed = false }
            t.candidates = candidates
            t.next = 0
            t.fingerprintHint = fingerprintHint
            dialTargets[key] = t
        } else {
            var t = DialTarget(candidates: candidates, source: .discovered)
            t.fingerprintHint = fingerprintHint
            dialTargets[key] = t
        }
        dial(key)
    }

    func removeDialTarget(key: String) {
        dialTargets[key]?.timer?.cancel()
        dialTargets[key] = nil
    }

    /// The identity (hex) whose fingerprint is `compact`, among sessions that are up.
    private func onlineIdentity(fingerprint compact: String) -> String? {
        sessions.keys.first { Node.fingerprintCompact(ofHex: $0) == compact }
    }

    static func fingerprintCompact(ofHex hex: String) -> String {
        guard let b = Sodium.fromHex(hex), let k = try? IdentityPublicKey(bytes: b) else { return hex }
        return Fingerprint(k).compact
    }

    /// Replaces the static peer set (configuration reload).
    func setStaticPeers(_ addresses: [HostPort]) {
        loop.preconditionInEventLoop()
        let wanted = Set(addresses.map(\.description))
        for (k, t) in dialTargets where t.source == .configured && !wanted.contains(k) {
            t.timer?.cancel()
            dialTargets[k] = nil
        }
        for a in addresses { addStaticPeer(a) }
    }

    private func dial(_ key: String) {
        guard !stopping, var target = dialTargets[key], !target.connecting else { return }
        target.timer?.cancel()
        target.timer = nil
        if let id = target.identity, sessions[id] != nil {
            dialTargets[key] = target // already connected (maybe they dialled us)
            return
        }
        if target.spoofed { dialTargets[key] = target; return }
        if let hint = target.fingerprintHint, let id = onlineIdentity(fingerprint: hint),
           let session = sessions[id],
           target.candidates.contains(where: { $0.host == session.remoteAddress.hostPart }) {
            // Already connected to that identity at an address this advertisement lists.
            // (An advertisement claiming it from elsewhere is dialled: the handshake will
            // show whether it is the same node or a spoof.)
            target.identity = id
            dialTargets[key] = target
            return
        }
        guard !target.candidates.isEmpty else { return }
        let address = target.candidates[target.next % target.candidates.count]
        target.connecting = true
        dialTargets[key] = target
        let conn = makeConnection(direction: .outbound, dialedAddress: key)
        conn.expectedFingerprint = target.fingerprintHint
        // The handler is created here, on the loop, and only ever used on it.
        let bound = NIOLoopBound(conn, eventLoop: loop)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .connectTimeout(options.handshakeTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(NoiseFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(bound.value)
                }
            }
            .connect(host: address.host, port: Int(address.port))
            .whenComplete { [weak self] result in
                guard let self else { return }
                if case .failure(let error) = result {
                    self.connections[ObjectIdentifier(bound.value)] = nil
                    self.log.debug("dial failed", ["address": key, "error": "\(error)"])
                    self.dialFinished(key, success: false)
                }
            }
    }

    private func dialFinished(_ key: String, success: Bool) {
        guard var t = dialTargets[key] else { return }
        t.connecting = false
        if success {
            t.failures = 0
            dialTargets[key] = t
            return
        }
        t.failures += 1
        t.next += 1 // try the next advertised address
        dialTargets[key] = t
        scheduleRedial(key)
    }

    private func scheduleRedial(_ key: String) {
        guard !stopping, var t = dialTargets[key], t.timer == nil, !t.connecting else { return }
        let base = options.redialInitial.nanoseconds << Int64(min(t.failures, 10))
        let capped = min(base, options.redialMax.nanoseconds)
        // Jitter (0.5x-1x) so two nodes that lost each other do not redial in lockstep.
        let jittered = capped / 2 + Int64(Sodium.randomUniform(UInt32(clamping: max(capped / 2, 1) / 1_000_000))) * 1_000_000
        t.timer = loop.scheduleTask(in: .nanoseconds(jittered)) { [weak self] in
            guard let self else { return }
            self.dialTargets[key]?.timer = nil
            self.dial(key)
        }
        dialTargets[key] = t
    }

    // MARK: PeerConnectionDelegate

    func connectionEstablished(_ conn: PeerConnection) {
        releaseAdmission(conn)
        guard let est = conn.established, !stopping else { conn.close(reason: .normal); return }
        guard sessions.count < DaemonLimits.maxSessions || sessions[est.remoteCard.identityKey.hex] != nil else {
            attackLog.log(key: "sessions-full", "session limit reached; refusing", ["limit": "\(DaemonLimits.maxSessions)"])
            conn.close(reason: .normal, text: "too many sessions")
            return
        }
        let remote = est.remoteCard
        let id = remote.identityKey.hex
        if let expected = conn.expectedFingerprint, expected != remote.fingerprint.compact {
            // The advertisement claimed one identity, the handshake proved another.
            attackLog.log(key: "spoof:" + conn.remoteAddress.hostPart,
                          "SPOOFING: an mDNS advertisement claimed a fingerprint its handshake did not prove; not trusted",
                          ["claimed": expected, "proven": remote.fingerprint.description, "address": conn.remoteAddress])
            conn.close(reason: .notTrusted, text: "advertised fingerprint does not match")
            // Do not knock again until the advertisement changes.
            if let key = conn.dialedAddress { dialTargets[key]?.spoofed = true }
            return
        }
        if let key = conn.dialedAddress { dialTargets[key]?.identity = id }

        switch decideTrust(for: remote, connection: conn) {
        case .accept:
            break
        case .refuse(let reason, let text):
            conn.close(reason: reason, text: text)
            return
        }

        if let existing = sessions[id], existing !== conn {
            if keepNew(conn, over: existing, peer: id) {
                existing.isActiveSession = false
                existing.close(reason: .duplicate, text: "another session was kept")
            } else {
                conn.close(reason: .duplicate, text: "another session was kept")
                return
            }
        }
        let wasOnline = sessions[id] != nil || pendingOffline.removeValue(forKey: id).map { $0.cancel(); return true } == true
        sessions[id] = conn
        conn.isActiveSession = true
        if let key = conn.dialedAddress { dialFinished(key, success: true) }
        try? store.touchPeer(identity: id, at: Node.nowMs(), address: conn.dialedAddress)
        log.info("session up", ["peer": remote.displayName, "fingerprint": remote.fingerprint.description,
                                "address": conn.remoteAddress, "direction": conn.direction.rawValue])
        if !wasOnline { emit(.peerOnline(identity: id)) }
        pump(conn)
        sendPendingReadReceipts(conn)
    }

    /// The documented duplicate-session rule (docs/PROTOCOL.md, "One session per pair").
    private func keepNew(_ new: PeerConnection, over old: PeerConnection, peer: String) -> Bool {
        guard let newEst = new.established, let oldEst = old.established else { return true }
        // The peer restarted: whatever we still hold from its previous run is stale.
        if newEst.remoteBootID != oldEst.remoteBootID { return true }
        // Same run on both sides: keep the connection initiated by the smaller identity key.
        let preferred = min(myIdentity, peer)
        func initiator(_ c: PeerConnection) -> String { c.direction == .outbound ? myIdentity : peer }
        let newPreferred = initiator(new) == preferred
        let oldPreferred = initiator(old) == preferred
        if newPreferred != oldPreferred { return newPreferred }
        return false // same initiator twice: keep the older one
    }

    func connection(_ conn: PeerConnection, received chats: [ChatRecord]) {
        guard conn.isActiveSession, let sender = conn.remoteIdentity else { return }
        let now = Node.nowMs()
        let incoming = chats.map {
            IncomingMessage(id: $0.id.hex, sender: sender, recipient: myIdentity,
                            sequence: Int64(clamping: $0.sequence), createdAt: Int64(clamping: $0.createdAt),
                            body: $0.body)
        }
        let results: [(message: StoredMessage, isNew: Bool)]
        do {
            results = try store.storeIncoming(incoming, at: now)
        } catch {
            // Not stored, so not acknowledged: the sender keeps them queued and resends.
            log.error("could not store incoming messages; they stay queued at the sender", ["error": "\(error)"])
            conn.close(reason: .normal, text: "receiver storage failure")
            return
        }
        var ids = chats.map(\.id)
        while !ids.isEmpty {
            let n = min(ids.count, WireLimits.maxAcksPerRecord)
            conn.send(.ack(Array(ids.prefix(n))))
            ids.removeFirst(n)
        }
        for r in results where r.isNew { emit(.messageReceived(r.message)) }
    }

    func connection(_ conn: PeerConnection, acknowledged ids: [MessageID]) {
        guard let peer = conn.remoteIdentity else { return }
        let hex = ids.map(\.hex)
        for h in hex {
            if let f = conn.inFlight.removeValue(forKey: h) { conn.inFlightBytes -= f.bytes }
        }
        do {
            let changed = try store.markDelivered(ids: hex, by: peer, at: Node.nowMs())
            if !changed.isEmpty { queuedCounts?[peer, default: 0] -= changed.count }
            for m in changed { emit(.messageDelivered(m)) }
        } catch {
            log.error("could not record delivery; the messages will be sent again and de-duplicated", ["error": "\(error)"])
        }
        roomTrafficAcknowledged(hex, by: peer)
        pump(conn)
    }

    func connection(_ conn: PeerConnection, receivedCard bytes: [UInt8]) {
        guard let peer = conn.remoteIdentity else { return }
        do {
            let newCard: Card
            do { newCard = try Card.decode(bytes) } catch {
                // A cardUpdate that does not decode and verify is a malformed record
                // (docs/PROTOCOL.md "Record types"), like any other.
                attackLog.log(key: conn.remoteAddress, "undecodable card update; closing", ["address": conn.remoteAddress, "error": "\(error)"])
                conn.close(reason: .protocolError, text: "card update: \(error)")
                return
            }
            guard !Node.isExpiredCardUpdate(newCard, nowSeconds: UInt64(max(0, Node.nowMs() / 1000))) else {
                // Well formed, so not a protocol error (the clocks may disagree), but an
                // expired card authenticates nothing: pinning it would make the peer's
                // valid handshake cards with lower sequences look stale.
                log.warning("expired card update ignored", ["peer": Node.fingerprint(ofHex: peer), "sequence": "\(newCard.sequence)"])
                return
            }
            guard newCard.identityKey.hex == peer else {
                attackLog.log(key: conn.remoteAddress, "card update for another identity refused", ["address": conn.remoteAddress])
                conn.close(reason: .protocolError, text: "card update for another identity")
                return
            }
            guard var rec = try store.peer(identity: peer), Int64(clamping: newCard.sequence) > rec.cardSequence else { return }
            rec.card = newCard.encoded()
            rec.cardSequence = Int64(clamping: newCard.sequence)
            rec.noiseKey = newCard.noiseKey.hex
            rec.displayName = newCard.displayName
            rec.hostName = newCard.hostName
            try upsertPeer(rec)
            log.info("peer re-issued its card", ["peer": newCard.displayName, "sequence": "\(newCard.sequence)"])
        } catch {
            log.warning("bad card update", ["peer": Node.fingerprint(ofHex: peer), "error": "\(error)"])
        }
    }

    /// docs/PROTOCOL.md "cardUpdate": an expired card is not pinned.
    static func isExpiredCardUpdate(_ card: Card, nowSeconds: UInt64) -> Bool { card.isExpired(now: nowSeconds) }

    func connectionBecameWritable(_ conn: PeerConnection) { pump(conn) }

    func connectionClosed(_ conn: PeerConnection, error: Error?) {
        connections[ObjectIdentifier(conn)] = nil
        releaseAdmission(conn)
        if let error, conn.established == nil {
            // A failed handshake: log once per source address, never per packet.
            attackLog.log(key: conn.remoteAddress.hostPart, "handshake failed",
                              ["address": conn.remoteAddress, "error": "\(error)"])
        } else if let error {
            log.info("session closed", ["address": conn.remoteAddress, "error": "\(error)"])
        }
        if let key = conn.dialedAddress, dialTargets[key]?.connecting == true { dialFinished(key, success: false) }
        if let key = conn.dialedAddress, let r = conn.remoteCloseReason, r == .keyChangePending || r == .notTrusted {
            // Refused by the peer's trust policy: back off instead of knocking every half second.
            dialTargets[key]?.failures += 2
            scheduleRedial(key)
        }
        guard let id = conn.remoteIdentity, sessions[id] === conn else { return }
        sessions[id] = nil
        log.info("session down", ["peer": Node.fingerprint(ofHex: id)])
        if conn.remoteCloseReason == .duplicate && !stopping {
            // The peer kept another connection with us, which is finishing its handshake.
            pendingOffline[id]?.cancel()
            pendingOffline[id] = loop.scheduleTask(in: .seconds(2)) { [weak self] in
                guard let self, self.pendingOffline.removeValue(forKey: id) != nil, self.sessions[id] == nil else { return }
                self.emit(.peerOffline(identity: id))
            }
        } else {
            emit(.peerOffline(identity: id))
        }
        for (k, t) in dialTargets where t.identity == id { scheduleRedial(k) }
    }

    // MARK: Trust on first use

    enum TrustDecision { case accept, refuse(CloseReason, String) }

    private func decideTrust(for remote: Card, connection conn: PeerConnection) -> TrustDecision {
        let id = remote.identityKey.hex
        let now = Node.nowMs()
        do {
            if var known = try store.peer(identity: id) {
                if known.trust == .blocked { return .refuse(.notTrusted, "blocked") }
                if known.replacedBy != nil {
                    attackLog.log(key: id, "an identity that was replaced after a key change tried to connect",
                                      ["fingerprint": remote.fingerprint.description, "address": conn.remoteAddress])
                    return .refuse(.notTrusted, "identity was replaced")
                }
                let seq = Int64(clamping: remote.sequence)
                if seq < known.cardSequence {
                    attackLog.log(key: id, "peer presented an older card than the one pinned; refused",
                                      ["peer": known.displayName, "presented": "\(seq)", "pinned": "\(known.cardSequence)"])
                    return .refuse(.notTrusted, "stale card")
                }
                if seq == known.cardSequence && remote.encoded() != known.card {
                    attackLog.log(key: id, "two different cards with the same sequence; refused", ["peer": known.displayName])
                    return .refuse(.notTrusted, "conflicting card")
                }
                if seq > known.cardSequence {
                    // A re-issued card from the same identity: a rotation, accepted silently.
                    known.card = remote.encoded()
                    known.cardSequence = seq
                    known.noiseKey = remote.noiseKey.hex
                    known.displayName = remote.displayName
                    known.hostName = remote.hostName
                    try upsertPeer(known)
                }
                return .accept
            }
            // An identity we have never seen. Is it posing under a name or address we know?
            var previous = try store.peers(named: remote.displayName).first { $0.identity != id }
            var detectedBy = KeyChangeEvidence.name
            if previous == nil, let addr = conn.dialedAddress, let p = try store.peer(atAddress: addr), p.identity != id, p.replacedBy == nil {
                previous = p
                detectedBy = .address
            }
            if let old = previous {
                let existing = try store.pendingKeyChange(newIdentity: id)
                peerCache = nil
            let change = try store.recordKeyChange(displayName: remote.displayName, oldIdentity: old.identity,
                                                       newIdentity: id, newCard: remote.encoded(),
                                                       address: conn.dialedAddress ?? conn.remoteAddress, at: now)
                if old.trust != .changed { try setTrust(identity: old.identity, .changed) }
                if existing == nil {
                    log.warning(detectedBy.logMessage,
                                ["name": remote.displayName, "known": old.displayName, "old": Node.fingerprint(ofHex: old.identity),
                                 "new": remote.fingerprint.description, "address": conn.remoteAddress])
                    emit(.keyChanged(change))
                }
                return .refuse(.keyChangePending, "key change pending")
            }
            try upsertPeer(PeerRecord(identity: id, displayName: remote.displayName, hostName: remote.hostName,
                                            card: remote.encoded(), cardSequence: Int64(clamping: remote.sequence),
                                            noiseKey: remote.noiseKey.hex, trust: .pinned, firstSeen: now, lastSeen: now,
                                            lastAddress: conn.dialedAddress, replacedBy: nil))
            log.info("new peer pinned", ["peer": remote.displayName, "fingerprint": remote.fingerprint.description])
            return .accept
        } catch {
            log.error("trust store failure; refusing session", ["error": "\(error)"])
            return .refuse(.normal, "receiver storage failure")
        }
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

    private func upsertPeer(_ rec: PeerRecord) throws(StoreError) {
        peerCache = nil
        try store.upsertPeer(rec)
    }

    private func setTrust(identity: String, _ trust: TrustState) throws(StoreError) {
        peerCache = nil
        try store.setTrust(identity: identity, trust)
    }

    // MARK: Outbox

    /// Sends queued messages to the peer of `conn`, up to the window. Each session
    /// remembers the highest sequence it sent, so a pump reads only new rows; a
    /// retarget (key change) or an ack timeout resets it to resend from the start.
    func pump(_ conn: PeerConnection) {
        guard conn.isActiveSession, conn.isWritable, let peer = conn.remoteIdentity else { return }
        // Room membership first, room messages last (Node+Rooms.swift): an operation that
        // makes us a member reaches the peer before our first message to the room.
        // The room outboxes are skipped while the store knows them to be empty.
        let roomWork = store.roomOutboxesMayHaveWork
        if roomWork { pumpRoomOperations(conn, peer: peer) }
        defer { if roomWork { pumpRoomMessages(conn, peer: peer) } }
        let room = options.sendWindow - conn.inFlight.count
        guard room > 0, conn.inFlightBytes < options.sendWindowBytes else { return }
        if let newest = newestQueued[peer], newest <= conn.sentThrough { return }
        let pending: [StoredMessage]
        do {
            pending = try store.pendingOutgoing(to: peer, afterSequence: conn.sentThrough, limit: room)
        } catch {
            log.error("could not read the outbox", ["error": "\(error)"])
            return
        }
        let now = NIODeadline.now()
        for m in pending where conn.inFlight[m.id] == nil {
            guard conn.inFlightBytes < options.sendWindowBytes else { break }
            guard let mid = MessageID(hex: m.id) else { continue }
            conn.send(.chat(ChatRecord(id: mid, sequence: UInt64(max(0, m.sequence)),
                                       createdAt: UInt64(max(0, m.createdAt)), body: m.body)))
            let size = m.body.utf8.count
            conn.inFlight[m.id] = (now, size)
            conn.inFlightBytes += size
            conn.sentThrough = max(conn.sentThrough, m.sequence)
        }
    }

    private func keepalive() {
        let now = NIODeadline.now()
        // Lets pumps skip the room outboxes once nothing is queued in them.
        if store.roomOutboxesMayHaveWork {
            do { try store.checkRoomOutboxesEmpty() } catch { log.error("could not check the room outboxes", ["error": "\(error)"]) }
        }
        let liveness = LivenessRule(pingInterval: options.pingInterval, deadAfter: options.deadAfter)
        for conn in sessions.values {
            switch liveness.verdict(now: now, lastReceived: conn.lastReceived, lastSent: conn.lastSent,
                                    lastPing: conn.lastPingSentAt) {
            case .dead:
                log.info("peer silent; dropping the connection", ["peer": Node.fingerprint(ofHex: conn.remoteIdentity ?? "")])
                conn.drop()
                continue
            case .ping:
                conn.lastPingSentAt = now
                conn.send(.ping(UInt64(now.uptimeNanoseconds)))
            case .nothing:
                break
            }
            if let oldest = conn.inFlight.values.map(\.sentAt).min(), now - oldest > options.ackTimeout {
                conn.inFlight.removeAll()
                conn.inFlightBytes = 0
                conn.sentThrough = 0
                pump(conn)
            }
        }
    }

    // MARK: Local API (control socket)

    /// Queues a message durably; returns once it is on disk.
    func send(to peer: PeerRecord, body: String) throws(NodeError) -> StoredMessage {
        try sendMany([(peer, body)])[0].get()
    }

    /// Queues several messages in ONE transaction (one fsync): a pipelining client's
    /// requests from one read are committed together, and each is answered only after
    /// that commit. Invalid ones fail alone; a storage failure fails all of them.
    func sendMany(_ items: [(PeerRecord, String)]) -> [Result<StoredMessage, NodeError>] {
        loop.preconditionInEventLoop()
        var results = [Result<StoredMessage, NodeError>?](repeating: nil, count: items.count)
        var batch: [NewOutgoingMessage] = []
        var batchIndex: [Int] = []
        if queuedCounts == nil { queuedCounts = try? store.pendingRecipients() }
        var planned: [String: Int] = [:]
        let now = Node.nowMs()
        for (i, (peer, body)) in items.enumerated() {
            let size = body.utf8.count
            if size == 0 { results[i] = .failure(.emptyBody); continue }
            if size > WireLimits.maxBodyBytes { results[i] = .failure(.bodyTooLarge(size)); continue }
            if peer.trust == .changed || peer.replacedBy != nil { results[i] = .failure(.keyChangePending(peer)); continue }
            let queued = (queuedCounts?[peer.identity] ?? 0) + planned[peer.identity, default: 0]
            if queued >= DaemonLimits.maxQueuedPerPeer {
                results[i] = .failure(.queueFull(peer, DaemonLimits.maxQueuedPerPeer)); continue
            }
            planned[peer.identity, default: 0] += 1
            batch.append(NewOutgoingMessage(id: MessageID.random().hex, recipient: peer.identity, body: body, createdAt: now))
            batchIndex.append(i)
        }
        if !batch.isEmpty {
            do {
                let stored = try store.enqueue(batch, sender: myIdentity)
                for (k, m) in stored.enumerated() where k < batchIndex.count { results[batchIndex[k]] = .success(m) }
                for (peer, n) in planned { queuedCounts?[peer, default: 0] += n }
                for m in stored { newestQueued[m.recipient] = max(newestQueued[m.recipient] ?? m.sequence, m.sequence) }
                for peer in planned.keys { if let conn = sessions[peer] { pump(conn) } }
            } catch {
                for i in batchIndex { results[i] = .failure(.storage(error)) }
            }
        }
        return results.map { $0 ?? .failure(.storage(.io(path: store.path, reason: "not stored"))) }
    }

    /// Finds a peer by display name, fingerprint prefix or identity hex.
    func resolvePeer(_ query: String) throws(NodeError) -> PeerRecord {
        let all: [PeerRecord]
        do { all = try allPeers() } catch { throw .storage(error) }
        let live = all.filter { $0.replacedBy == nil }
        if let exact = live.first(where: { $0.identity == query.lowercased() }) { return exact }
        let byName = live.filter { $0.displayName == query }
        if byName.count == 1 { return byName[0] }
        if byName.count > 1 { throw .peerAmbiguous(query, byName) }
        let byNameCI = live.filter { $0.displayName.lowercased() == query.lowercased() }
        if byNameCI.count == 1 { return byNameCI[0] }
        if byNameCI.count > 1 { throw .peerAmbiguous(query, byNameCI) }
        let byPrefix = live.filter { rec in
            guard let b = Sodium.fromHex(rec.identity), let k = try? IdentityPublicKey(bytes: b) else { return false }
            return Fingerprint(k).matches(prefix: query)
        }
        if byPrefix.count == 1 { return byPrefix[0] }
        if byPrefix.count > 1 { throw .peerAmbiguous(query, byPrefix) }
        throw .peerNotFound(query)
    }

    func isOnline(_ identity: String) -> Bool { sessions[identity] != nil }

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

    func addresses(of identity: String) -> [String] {
        var out: [String] = []
        if let c = sessions[identity] { out.append(c.remoteAddress) }
        for (k, t) in dialTargets where t.identity == identity && !out.contains(k) { out.append(k) }
        return out
    }

    /// Marks a peer verified after a person compared fingerprints.
    func verify(_ peer: PeerRecord, fingerprint given: String) throws(NodeError) -> PeerRecord {
        let expected = Node.fingerprint(ofHex: peer.identity)
        guard let g = Fingerprint.normalize(given), let e = Fingerprint.normalize(expected), g == e else {
            throw .fingerprintMismatch(expected: expected, given: given)
        }
        do {
            try setTrust(identity: peer.identity, .verified)
            return try store.peer(identity: peer.identity) ?? peer
        } catch { throw .storage(error) }
    }

    /// A person accepted a key change: pin the new identity, move queued messages to it.
    func acceptKeyChange(_ peer: PeerRecord) throws(NodeError) -> (PeerRecord, Int) {
        do {
            let changes = try store.pendingKeyChanges().filter { $0.oldIdentity == peer.identity || $0.newIdentity == peer.identity }
            guard let change = changes.last else { throw NodeError.noPendingKeyChange(peer.displayName) }
            let newCard = try Card.decode(change.newCard)
            let now = Node.nowMs()
            let rec = PeerRecord(identity: change.newIdentity, displayName: newCard.displayName, hostName: newCard.hostName,
                                 card: change.newCard, cardSequence: Int64(clamping: newCard.sequence),
                                 noiseKey: newCard.noiseKey.hex, trust: .pinned, firstSeen: now, lastSeen: now,
                                 lastAddress: change.address, replacedBy: nil)
            peerCache = nil
            let moved = try store.acceptKeyChange(id: change.id, newPeer: rec, at: now)
            queuedCounts = nil // retargeted: reload on next send
            newestQueued.removeAll() // moved to another recipient: query again
            log.warning("key change accepted by a person", ["name": newCard.displayName, "new": newCard.fingerprint.description])
            // Reconnect now rather than waiting for backoff.
            for (k, t) in dialTargets where t.identity == change.oldIdentity || t.identity == change.newIdentity {
                dialTargets[k]?.identity = change.newIdentity
                _ = t
                dial(k)
            }
            return (rec, moved)
        } catch let e as NodeError {
            throw e
        } catch let e as StoreError {
            throw .storage(e)
        } catch {
            throw .noPendingKeyChange(peer.displayName)
        }
    }

    /// Re-issues our card (new name or Noise key) with a higher sequence and
    /// sends it to every peer online now; the others get it in their next handshake.
    func reissueCard(displayName: String, hostName: String) throws {
        let next = try Card.issue(identity: keys.identity, noiseKey: keys.noiseStatic.publicKey,
                                  displayName: displayName, hostName: hostName,
                                  issuedAt: UInt64(max(0, Node.nowMs() / 1000)), sequence: card.sequence + 1)
        try store.setSetting(OwnCard.settingKey, Sodium.hex(next.encoded()))
        card = next
        for c in sessions.values { c.send(.cardUpdate(next.encoded())) }
        onCardChanged?(next)
        log.info("card re-issued", ["name": displayName, "sequence": "\(next.sequence)"])
    }

    /// `parley rotate-key`: a new Noise static key on disk, then a re-issued card.
    /// New handshakes use the new key at once; peers refuse the old card from then on
    /// (its sequence is lower), so nobody encrypts to the old key after seeing the new.
    func rotateNoiseKey() throws -> Int {
        guard let dir = stateDirectory else { throw NodeError.storage(.io(path: "?", reason: "no state directory")) }
        let fresh = NoiseStaticKeyPair.generate()
        try KeyFiles.writeNoiseStatic(fresh, stateDirectory: dir)
        keys = NodeKeys(identity: keys.identity, noiseStatic: fresh)
        try reissueCard(displayName: card.displayName, hostName: card.hostName)
        log.info("Noise static key rotated", ["sequence": "\(card.sequence)"])
        return sessions.count
    }

    /// Dials an address given at run time (`parley connect`).
    func connect(address: String) throws(NodeError) {
        guard let hp = try? HostPort(parsing: address) else { throw .invalidAddress(address) }
        addStaticPeer(hp)
    }
}

/// A peer we keep dialling until a session is up: a configured address, or the
/// addresses an mDNS advertisement listed (tried in turn).
struct DialTarget {
    enum Source { case configured, discovered }
    var candidates: [HostPort]
    var next = 0
    let source: Source
    var identity: String?
    var fingerprintHint: String?
    /// The advertisement's claimed fingerprint was not what its handshake proved.
    var spoofed = false
    var connecting = false
    var failures = 0
    var timer: Scheduled<Void>?

    init(candidates: [HostPort], source: Source) {
        self.candidates = candidates
        self.source = source
    }
}

private struct WeakObserver {
    weak var value: NodeObserver?
    init(_ v: NodeObserver) { value = v }
}

extension String {
    /// "10.0.0.1:7744" -> "10.0.0.1", "[::1]:7744" -> "::1" (for per-source limits).
    var hostPart: String {
        if hasPrefix("["), let end = firstIndex(of: "]") { return String(self[index(after: startIndex)..<end]) }
        if let colon = lastIndex(of: ":") { return String(self[..<colon]) }
        return self
    }
}
