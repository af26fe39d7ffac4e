import NIOCore
import NIOPosix
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Reachability: how peers find this node and each other without mDNS. It owns what this
/// node knows of its own reachability (the addresses its listeners are bound to, the
/// ports it announces, its signed address record, its mDNS instance name and whether its
/// own advertisement came back), address gossip among contacts (`AddressGossip`, and who
/// is a contact), and the dial-back probe of `parley doctor` (answering one under its
/// rate limit, and waiting for the answer to ours). It performs what `AddressGossip`
/// decides on sessions (+Sessions.swift: our record and tags at a session's start, records
/// taken or not, relays), and answers `parley doctor`'s questions about reachability.
/// Learned addresses go to the `DialDriver`; sessions are read from the `SessionDriver`;
/// room co-membership comes from its `GossipHost`.
///
/// Its state is its own and lives on the node's event loop (the loop is its lock). The
/// clock is injected: its own record's age and the probe's timeout run on a mock clock in
/// tests.
final class GossipDriver {
    let loop: EventLoop
    let clock: any NodeClock
    let log: Logger
    /// Only the address-book concern of the store (`AddressBookStore`).
    let store: any AddressBookStore
    let directory: PeerDirectory
    /// Dialling learned addresses, and what `parley doctor` asks of the dial targets.
    let dial: DialDriver
    /// The sessions up, to send records on.
    let sessions: SessionDriver
    /// Room co-membership (`Node`).
    weak var host: (any GossipHost)?

    /// How long our own signed record is reused before it is signed again (its date must
    /// stay well inside `GossipLimits.maxRecordAgeMs` wherever it is relayed).
    static let ownRecordLifetimeMs: Int64 = 3600 * 1000

    /// The decisions of address gossip (ParleyNodeCore).
    var gossip: AddressGossip
    /// What this node knows of its own reachability.
    private var own: OwnReachability

    /// The TCP ports this node listens on, announced to every peer (`listenPorts` record).
    var listenPorts: [UInt16] {
        get { own.listenPorts }
        set { own.listenPorts = newValue }
    }
    /// The addresses the listeners are bound to ("host:port"), for our signed address record.
    var listenAddresses: [String] {
        get { own.listenAddresses }
        set { own.listenAddresses = newValue }
    }
    /// Our own mDNS instance name (Avahi may rename it on a conflict).
    var ownInstanceName: String? {
        get { own.instanceName }
        set { own.instanceName = newValue }
    }
    /// Our own advertisement came back through our browser (`parley doctor`).
    var ownAdvertisementSeen: Bool {
        get { own.advertisementSeen }
        set { own.advertisementSeen = newValue }
    }

    /// Peers the local user has written to (a yes from the store is kept: having written
    /// to someone stays true).
    private var talkedWith = Set<IdentityPublicKey>()
    /// Dial-back probes answered, per requesting host (`GossipLimits.dialBack*`).
    private var dialBackLimit = DialRateLimit(
        burst: GossipLimits.dialBackBurst, interval: GossipLimits.dialBackInterval)
    /// Our own dial-back probes waiting for their answer, by nonce.
    private var dialBackWaiters: [UInt64: (timeout: Scheduled<Void>, report: (DialBackResult.Outcome?) -> Void)] =
        [:]

    init(
        identity: IdentityKeyPair, store: any AddressBookStore, directory: PeerDirectory, loop: EventLoop,
        clock: any NodeClock,
        log: Logger, dial: DialDriver, sessions: SessionDriver
    ) {
        self.own = OwnReachability(identity: identity)
        self.dial = dial
        self.sessions = sessions
        self.store = store
        self.directory = directory
        self.loop = loop
        self.clock = clock
        self.log = log
        self.gossip = AddressGossip(own: identity.publicKey)
    }

    var nowMs: Int64 { clock.wallMilliseconds() }

    // MARK: Contacts

    /// A contact (docs/PROTOCOL.md "Address gossip"): trusted (not blocked, held or
    /// replaced) and either verified by a person or written to by the local user. A key
    /// pinned by a mere handshake is a stranger: anyone on the LAN can complete one, and
    /// send a chat too, so a message *from* it proves nothing. The only identities whose
    /// addresses we keep or relay, and the only peers we relay to.
    func isContact(_ peer: IdentityPublicKey) -> Bool {
        guard let rec = directory.peer(peer), PeerDirectory.knownPeer(rec).standing == .trusted
        else { return false }
        if rec.trust == .verified || talkedWith.contains(peer) { return true }
        guard (try? store.hasSentMessages(to: peer)) == true else { return false }
        talkedWith.insert(peer)
        return true
    }

    /// The local user just wrote to `peer`: true if that made it a contact now (it was not
    /// one from an earlier message), so the session already up with it starts gossip, which
    /// otherwise starts only at a session's start. Without this, two people who met by mDNS
    /// and then talked exchanged no address record or contact tags until they reconnected,
    /// and a contact who moved off their subnet was not found again through the others.
    /// One set lookup on the message path once `peer` is a contact (at most one gossip start
    /// per peer and run: a contact from an earlier run, or a verified one, starts it again
    /// on the first message, which costs one record and one tag list).
    func wroteTo(_ peer: IdentityPublicKey) -> Bool {
        guard !talkedWith.contains(peer) else { return false }
        guard isContact(peer) else { return false }
        // Also for a verified peer (a contact without this set): once per run, not per message.
        talkedWith.insert(peer)
        return true
    }

    func contactSet() -> Set<IdentityPublicKey> {
        Set(((try? directory.peers()) ?? []).map(\.identity).filter(isContact))
    }

    // MARK: Records of others

    /// Keeps an accepted record in the store, so it can be relayed after a restart before
    /// its subject is back. One the store cannot keep is still relayed in this run; the
    /// failure is logged.
    func keep(_ record: SignedAddressRecord) {
        do {
            try store.saveAddressRecord(
                record.encoded(), of: record.identity, issuedAt: Int64(clamping: record.issuedAt))
        } catch {
            log.error(
                "could not keep a contact's address record for after a restart",
                ["peer": record.identity.fingerprintText, "error": "\(error)"])
        }
    }

    // MARK: Our own record

    /// Our own record: the addresses we listen at, signed now and then.
    func ownAddressRecord() -> SignedAddressRecord? {
        if let cached = own.record, nowMs - Int64(cached.issuedAt) < Self.ownRecordLifetimeMs { return cached }
        let endpoints = Self.listeningEndpoints(listenAddresses)
        guard !endpoints.isEmpty else { return nil }
        let record = try? SignedAddressRecord(
            signing: Array(endpoints.prefix(WireLimits.maxAddressesPerRecord)),
            issuedAt: UInt64(max(0, nowMs)), with: own.identity)
        own.record = record
        return record
    }

    /// Where others can reach our listeners: a listener bound to one address is reachable
    /// there only; one bound to a wildcard at every unicast address of the host's
    /// interfaces except loopback and IPv6 link-local (which needs a scope a peer cannot
    /// know).
    static func listeningEndpoints(
        _ bound: [String], interfaces listInterfaces: () -> [String] = GossipDriver.interfaceAddresses
    ) -> [SignedAddressRecord.Endpoint] {
        var out: [SignedAddressRecord.Endpoint] = []
        var interfaces: [String]?
        for b in bound {
            guard let colon = b.lastIndex(of: ":"), let port = UInt16(b[b.index(after: colon)...]) else { continue }
            var host = String(b[..<colon])
            if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
            let hosts: [String]
            if host == "0.0.0.0" || host == "::" {
                if interfaces == nil { interfaces = listInterfaces() }
                hosts = interfaces!.filter { host == "::" || !$0.contains(":") }
            } else {
                hosts = [host]
            }
            for h in hosts {
                if let e = SignedAddressRecord.Endpoint(host: h, port: port), e.isDialable, !out.contains(e) {
                    out.append(e)
                }
            }
        }
        return out
    }

    static func interfaceAddresses() -> [String] {
        guard let devices = try? System.enumerateDevices() else { return [] }
        var out: [String] = []
        for d in devices {
            guard let ip = d.address?.ipAddress else { continue }
            if ip.hasPrefix("127.") || ip == "::1" || ip.lowercased().hasPrefix("fe80") { continue }
            if !out.contains(ip) { out.append(ip) }
        }
        return out
    }

    // MARK: Dial-back (parley doctor)

    /// A peer on `conn` asks to be dialled back at `request.port` of the host its session
    /// comes from: refused over the per-host rate limit, else tried once.
    func dialBackRequested(_ request: DialBackRequest, on conn: PeerConnection) {
        let host = conn.remoteAddress.hostPart
        log.debug("dial-back requested", ["host": host, "port": "\(request.port)"])
        if dialBackLimit.take(host: host, now: clock.monotonicNow()) != nil {
            conn.send(.dialBackResult(DialBackResult(nonce: request.nonce, outcome: .refused)))
            return
        }
        let weak = NIOLoopBound(conn, eventLoop: loop)
        ClientBootstrap(group: loop)
            .connectTimeout(.seconds(3))
            .connect(host: host, port: Int(request.port))
            .whenComplete { result in
                let outcome: DialBackResult.Outcome
                switch result {
                case .success(let channel):
                    outcome = .connected
                    channel.close(promise: nil)
                case .failure: outcome = .failed
                }
                weak.value.send(.dialBackResult(DialBackResult(nonce: request.nonce, outcome: outcome)))
            }
    }

    /// The answer to one of our probes (an unknown or late nonce is ignored).
    func dialBackAnswered(_ result: DialBackResult) {
        guard let waiter = dialBackWaiters.removeValue(forKey: result.nonce) else { return }
        waiter.timeout.cancel()
        waiter.report(result.outcome)
    }

    /// Asks the peer on `conn` to dial us back at our first listening port; `report` gets
    /// the outcome, or nil after `timeout`. False if there is nothing to ask.
    func requestDialBack(
        on conn: PeerConnection, timeout: TimeAmount, report: @escaping (DialBackResult.Outcome?) -> Void
    ) -> Bool {
        guard conn.remoteFeatures.contains(.addressGossip), let port = listenPorts.first else { return false }
        let nonce = UInt64.random(in: 1...UInt64.max)
        guard let request = DialBackRequest(nonce: nonce, port: port) else { return false }
        let task = loop.scheduleTask(in: timeout) { [weak self] in
            guard let self, let w = self.dialBackWaiters.removeValue(forKey: nonce) else { return }
            w.report(nil)
        }
        dialBackWaiters[nonce] = (timeout: task, report: report)
        log.debug("dial-back asked", ["peer": conn.remoteIdentityKey?.fingerprintText ?? "-", "port": "\(port)"])
        conn.send(.dialBackRequest(request))
        return true
    }

    /// Probes waiting for an answer (tests).
    var dialBackWaiting: Int { dialBackWaiters.count }
}

/// What this node knows of its own reachability.
struct OwnReachability {
    /// Signs our address record.
    let identity: IdentityKeyPair
    var listenPorts: [UInt16] = []
    var listenAddresses: [String] = []
    var instanceName: String?
    var advertisementSeen = false
    /// Our signed record, reused for `GossipDriver.ownRecordLifetimeMs`.
    var record: SignedAddressRecord?
}

/// What gossip needs from the rest of the node: room co-membership (members reach each
/// other through the room, only while both are members). `Node` is the host.
protocol GossipHost: AnyObject {
    func isCoMember(_ identity: IdentityPublicKey) -> Bool
    func joinedRoomMembers() -> [Set<IdentityPublicKey>]
}
