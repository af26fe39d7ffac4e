import NIOCore
import NIOPosix
import ParleyCore
import ParleyNodeCore

/// Address gossip among contacts: routes the records to `GossipDriver`, which owns the
/// gossip state, and performs what `AddressGossip` decides (docs/PROTOCOL.md "Address
/// gossip"). Our own signed address record and our blinded contact tags go to every
/// contact at session start; records of common contacts go where the decision says.
extension Node {
    /// A contact (`GossipDriver.isContact`): the only identities whose addresses we keep
    /// or relay, and the only peers we relay to.
    func isContact(_ identity: IdentityPublicKey) -> Bool { gossipDriver.isContact(identity) }

    func contactSet() -> Set<IdentityPublicKey> { gossipDriver.contactSet() }

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
        let verdict = gossipDriver.gossip.received(
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
        gossipDriver.keep(record)
        // Every address in a record is the signer's claim (it may name any host): dialled
        // under the rate limit of unknown advertisements until one reaches the peer.
        dialDriver.remember(
            record.identity, addresses: record.endpoints.map { DialAddress(host: $0.host, port: $0.port) },
            gossiped: true)
    }

    /// At start: the contacts' records kept from earlier runs, so they can be relayed
    /// before their subjects are back. Each is verified again (the store is not trusted
    /// more than the wire) and judged like a first-hand record.
    func restoreAddressRecords() {
        guard let stored = try? store.addressRecords() else { return }
        for bytes in stored {
            guard let record = try? SignedAddressRecord.decode(bytes) else { continue }
            _ = gossipDriver.gossip.received(
                record, from: record.identity, isContact: { [unowned self] in self.isContact($0) },
                nowMs: UInt64(max(0, nowMs)))
            gossipDriver.gossip.sessionEnded(record.identity)  // the restore is no session of theirs
        }
    }

    func connection(_ conn: PeerConnection, receivedContactTags tags: ContactTags) {
        guard let peer = activePeer(of: conn), isContact(peer) || isCoMember(peer) else { return }
        gossipDriver.gossip.tagsReceived(tags, from: peer)
        relayAddressRecords()
    }

    /// Sends every record some session peer is now entitled to.
    func relayAddressRecords() {
        let peers = sessionDriver.table.peers.filter {
            activeConnection(for: $0)?.remoteFeatures.contains(.addressGossip) ?? false
        }
        let rooms = joinedRoomMembers()
        let due = gossipDriver.gossip.deliveries(
            sessions: Array(peers), isContact: { [unowned self] in self.isContact($0) },
            sharedRoom: { p, x in rooms.contains { $0.contains(p) && $0.contains(x) } },
            nowMs: UInt64(max(0, nowMs)))
        for (to, record) in due { activeConnection(for: to)?.send(.addressRecord(record)) }
    }

    /// Our own record: the addresses we listen at, signed now and then.
    func ownAddressRecord() -> SignedAddressRecord? { gossipDriver.ownAddressRecord() }

    /// Where others can reach our listeners (`GossipDriver.listeningEndpoints`).
    static func listeningEndpoints(_ bound: [String]) -> [SignedAddressRecord.Endpoint] {
        GossipDriver.listeningEndpoints(bound)
    }
}

// MARK: - Dial-back (parley doctor)

extension Node {
    /// A peer asks to be dialled back at `request.port` of the host its session comes from.
    func connection(_ conn: PeerConnection, receivedDialBackRequest request: DialBackRequest) {
        guard activePeer(of: conn) != nil else { return }
        gossipDriver.dialBackRequested(request, on: conn)
    }

    func connection(_ conn: PeerConnection, receivedDialBackResult result: DialBackResult) {
        gossipDriver.dialBackAnswered(result)
    }

    /// Asks `peer` to dial us back at our first listening port; `report` gets the outcome,
    /// or nil after `timeout`.
    func requestDialBack(
        from peer: IdentityPublicKey, timeout: TimeAmount, report: @escaping (DialBackResult.Outcome?) -> Void
    ) -> Bool {
        guard let conn = activeConnection(for: peer) else { return false }
        return gossipDriver.requestDialBack(on: conn, timeout: timeout, report: report)
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
        let discovered = dialDriver.planner.targets.values.filter { $0.source == .discovered }
        let unreachable = discovered.filter { t in
            t.failures > 0 && !(t.identity.map { sessionDriver.table.isOnline($0) } ?? false)
        }.count
        return DoctorFacts(
            ownAdvertisementSeen: gossipDriver.ownAdvertisementSeen, advertisements: discovered.count,
            unreachable: unreachable,
            staticPeers: dialDriver.planner.targets.values.filter { $0.source == .configured }.count)
    }

    /// A connected peer the person verified that understands the dial-back probe
    /// (`DialBackWitness`), and its name.
    func dialBackCandidate() -> (IdentityPublicKey, String)? {
        let candidates = sessionDriver.table.peers.map { peer in
            DialBackWitness.Candidate(
                identity: peer, verified: peerRecord(peer)?.trust == .verified,
                understandsProbe: activeConnection(for: peer)?.remoteFeatures.contains(.addressGossip) ?? false)
        }
        guard let peer = DialBackWitness.choose(candidates) else { return nil }
        return (peer, peerRecord(peer)?.displayName ?? peer.fingerprintText)
    }
}
