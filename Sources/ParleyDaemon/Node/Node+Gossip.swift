import NIOCore
import NIOPosix
import ParleyCore
import ParleyNodeCore

/// Address gossip among contacts: performs what `AddressGossip` decides (docs/PROTOCOL.md
/// "Address gossip"). Our own signed address record and our blinded contact tags go to
/// every contact at session start; records of common contacts go where the decision says.
extension Node {
    /// How long our own signed record is reused before it is signed again (its date must
    /// stay well inside `GossipLimits.maxRecordAgeMs` wherever it is relayed).
    static let ownRecordLifetimeMs: Int64 = 3600 * 1000

    /// A contact (docs/PROTOCOL.md "Address gossip"): trusted (not blocked, held or
    /// replaced) and either verified by a person or written to by the local user. A key
    /// pinned by a mere handshake is a stranger: anyone on the LAN can complete one, and
    /// send a chat too, so a message *from* it proves nothing. The only identities whose addresses we keep or relay, and the only
    /// peers we relay to.
    func isContact(_ identity: IdentityPublicKey) -> Bool {
        guard let rec = peerRecord(identity.hex), let known = Self.knownPeer(rec), known.standing == .trusted else {
            return false
        }
        if rec.trust == .verified || talkedWith.contains(identity) { return true }
        // One lookup; a yes is kept (having written to someone stays true).
        guard (try? store.hasSentMessages(to: identity.hex)) == true else { return false }
        talkedWith.insert(identity)
        return true
    }

    func contactSet() -> Set<IdentityPublicKey> {
        Set(((try? allPeers()) ?? []).compactMap { IdentityPublicKey(hex: $0.identity) }.filter(isContact))
    }

    /// The session with `peer` is up on `conn`: give it our record and our tags, and what
    /// it may now learn.
    func startGossip(on conn: PeerConnection, peer: IdentityPublicKey) {
        guard conn.remoteFeatures.contains(.addressGossip), isContact(peer) || isCoMember(peer) else { return }
        if let own = ownAddressRecord() { conn.send(.addressRecord(own)) }
        let contacts = contactSet().filter { $0 != peer }.sorted { $0.hex < $1.hex }
        conn.send(.contactTags(ContactTags(salt: Sodium.randomBytes(ContactTags.saltLength), identities: contacts)))
    }

    func connection(_ conn: PeerConnection, receivedAddressRecord record: SignedAddressRecord) {
        guard let peer = activePeer(of: conn) else { return }
        // Co-members' records too (room sync, issue 30): members reach each other through
        // the room, only while both are members.
        let verdict = gossip.received(
            record, from: peer, isContact: { [unowned self] in self.isContact($0) || self.isCoMember($0) },
            nowMs: UInt64(max(0, nowMs)))
        guard verdict == .accepted else {
            log.debug(
                "address record not taken",
                ["from": peer.fingerprintText, "about": record.identity.fingerprintText, "why": "\(verdict)"])
            return
        }
        learnedAddressRecord(record, from: peer)
        relayAddressRecords()
    }

    /// Keeps an accepted record and dials its addresses.
    func learnedAddressRecord(_ record: SignedAddressRecord, from peer: IdentityPublicKey) {
        log.info(
            "learned addresses",
            [
                "peer": record.identity.fingerprintText, "from": peer.fingerprintText,
                "addresses": record.endpoints.map(\.description).joined(separator: ",")
            ])
        try? store.saveAddressRecord(
            record.encoded(), of: record.identity.hex, issuedAt: Int64(clamping: record.issuedAt))
        // Every address in a record is the signer's claim (it may name any host): dialled
        // under the rate limit of unknown advertisements until one reaches the peer.
        let addresses = record.endpoints.map { DialAddress(host: $0.host, port: $0.port) }
        for a in addresses { try? store.rememberAddress(a.description, of: record.identity.hex, at: nowMs) }
        perform(
            dialPlanner.remember(
                record.identity, addresses: addresses, sessions: sessionView, gossiped: true,
                now: clock.monotonicNow()))
    }

    /// At start: the contacts' records kept from earlier runs, so they can be relayed
    /// before their subjects are back. Each is verified again (the store is not trusted
    /// more than the wire) and judged like a first-hand record.
    func restoreAddressRecords() {
        guard let stored = try? store.addressRecords() else { return }
        for bytes in stored {
            guard let record = try? SignedAddressRecord.decode(bytes) else { continue }
            _ = gossip.received(
                record, from: record.identity, isContact: { [unowned self] in self.isContact($0) },
                nowMs: UInt64(max(0, nowMs)))
            gossip.sessionEnded(record.identity)  // the restore is no session of theirs
        }
    }

    func connection(_ conn: PeerConnection, receivedContactTags tags: ContactTags) {
        guard let peer = activePeer(of: conn), isContact(peer) || isCoMember(peer) else { return }
        gossip.tagsReceived(tags, from: peer)
        relayAddressRecords()
    }

    /// Sends every record some session peer is now entitled to.
    func relayAddressRecords() {
        let peers = sessions.peers.filter {
            activeConnection(for: $0)?.remoteFeatures.contains(.addressGossip) ?? false
        }
        let rooms = joinedRoomMembers()
        let due = gossip.deliveries(
            sessions: Array(peers), isContact: { [unowned self] in self.isContact($0) },
            sharedRoom: { p, x in rooms.contains { $0.contains(p) && $0.contains(x) } },
            nowMs: UInt64(max(0, nowMs)))
        for (to, record) in due { activeConnection(for: to)?.send(.addressRecord(record)) }
    }

    /// Our own record: the addresses we listen at, signed now and then.
    func ownAddressRecord() -> SignedAddressRecord? {
        if let cached = ownRecordCache, nowMs - Int64(cached.issuedAt) < Self.ownRecordLifetimeMs {
            return cached
        }
        let endpoints = Self.listeningEndpoints(listenAddresses)
        guard !endpoints.isEmpty else { return nil }
        let record = try? SignedAddressRecord(
            signing: Array(endpoints.prefix(WireLimits.maxAddressesPerRecord)),
            issuedAt: UInt64(max(0, nowMs)), with: keys.identity)
        ownRecordCache = record
        return record
    }

    /// Where others can reach our listeners: a listener bound to one address is reachable
    /// there only; one bound to a wildcard at every unicast address of the host's
    /// interfaces except loopback and IPv6 link-local (which needs a scope a peer cannot
    /// know).
    static func listeningEndpoints(_ bound: [String]) -> [SignedAddressRecord.Endpoint] {
        var out: [SignedAddressRecord.Endpoint] = []
        var interfaces: [String]?
        for b in bound {
            guard let colon = b.lastIndex(of: ":"), let port = UInt16(b[b.index(after: colon)...]) else { continue }
            var host = String(b[..<colon])
            if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
            let hosts: [String]
            if host == "0.0.0.0" || host == "::" {
                if interfaces == nil { interfaces = interfaceAddresses() }
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
}

// MARK: - Dial-back (parley doctor)

extension Node {
    /// A peer asks to be dialled back at `request.port` of the host its session comes from.
    func connection(_ conn: PeerConnection, receivedDialBackRequest request: DialBackRequest) {
        guard activePeer(of: conn) != nil else { return }
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

    func connection(_ conn: PeerConnection, receivedDialBackResult result: DialBackResult) {
        guard let waiter = dialBackWaiters.removeValue(forKey: result.nonce) else { return }
        waiter.timeout.cancel()
        waiter.report(result.outcome)
    }

    /// Asks `peer` to dial us back at our first listening port; `report` gets the outcome,
    /// or nil after `timeout`.
    func requestDialBack(
        from peer: IdentityPublicKey, timeout: TimeAmount, report: @escaping (DialBackResult.Outcome?) -> Void
    ) -> Bool {
        guard let conn = activeConnection(for: peer), conn.remoteFeatures.contains(.addressGossip),
            let port = listenPorts.first
        else { return false }
        let nonce = UInt64.random(in: 1...UInt64.max)
        guard let request = DialBackRequest(nonce: nonce, port: port) else { return false }
        let task = loop.scheduleTask(in: timeout) { [weak self] in
            guard let self, let w = self.dialBackWaiters.removeValue(forKey: nonce) else { return }
            w.report(nil)
        }
        dialBackWaiters[nonce] = (timeout: task, report: report)
        log.debug("dial-back asked", ["peer": peer.fingerprintText, "port": "\(port)"])
        conn.send(.dialBackRequest(request))
        return true
    }
}

// MARK: - Doctor facts

extension Node {
    struct DoctorFacts {
        var ownAdvertisementSeen: Bool
        var advertisements: Int
        var unreachable: Int
        var staticPeers: Int
    }

    func doctorFacts() -> DoctorFacts {
        let discovered = dialPlanner.targets.values.filter { $0.source == .discovered }
        let unreachable = discovered.filter { t in
            t.failures > 0 && !(t.identity.map { sessions.isOnline($0) } ?? false)
        }.count
        return DoctorFacts(
            ownAdvertisementSeen: ownAdvertisementSeen, advertisements: discovered.count, unreachable: unreachable,
            staticPeers: dialPlanner.targets.values.filter { $0.source == .configured }.count)
    }

    /// A connected peer the person verified that understands the dial-back probe
    /// (`DialBackWitness`), and its name.
    func dialBackCandidate() -> (IdentityPublicKey, String)? {
        let candidates = sessions.peers.map { peer in
            DialBackWitness.Candidate(
                identity: peer, verified: peerRecord(peer.hex)?.trust == .verified,
                understandsProbe: activeConnection(for: peer)?.remoteFeatures.contains(.addressGossip) ?? false)
        }
        guard let peer = DialBackWitness.choose(candidates) else { return nil }
        return (peer, peerRecord(peer.hex)?.displayName ?? peer.fingerprintText)
    }
}
