import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Address gossip on sessions (docs/PROTOCOL.md "Address gossip"): performs what
/// `AddressGossip` decides. Our own signed address record and our blinded contact tags go
/// to every contact (and room co-member) at session start; a record is taken only on the
/// session kept for its sender, from a contact or co-member; records of common contacts go
/// where the decision says.
extension GossipDriver {
    /// A contact, or a member of a room we share (room sync, issue 30): members reach each
    /// other through the room, only while both are members.
    private func mayGossip(with peer: IdentityPublicKey) -> Bool {
        isContact(peer) || (host?.isCoMember(peer) ?? false)
    }

    /// The session with `peer` is up on `conn`: give it our record and our tags, and what
    /// it may now learn.
    func sessionStarted(on conn: PeerConnection, peer: IdentityPublicKey) {
        guard conn.remoteFeatures.contains(.addressGossip), mayGossip(with: peer) else { return }
        if let own = ownAddressRecord() { conn.send(.addressRecord(own)) }
        let contacts = contactSet().filter { $0 != peer }.sorted { $0.hex < $1.hex }
        conn.send(.contactTags(ContactTags(salt: Sodium.randomBytes(ContactTags.saltLength), identities: contacts)))
    }

    /// A peer's `addressRecord` on `conn`: ignored on any connection but its sender's kept
    /// session; judged by `AddressGossip.received`; an accepted one is kept, dialled and
    /// relayed.
    func received(_ record: SignedAddressRecord, on conn: PeerConnection) {
        guard let peer = sessions.activePeer(of: conn) else { return }
        let verdict = gossip.received(
            record, from: peer, isContact: { [unowned self] in self.mayGossip(with: $0) },
            nowMs: UInt64(max(0, nowMs)))
        guard verdict == .accepted else {
            log.debug(
                "address record not taken",
                ["from": peer.fingerprintText, "about": record.identity.fingerprintText, "why": "\(verdict)"])
            return
        }
        learned(record, from: peer)
        relay()
    }

    /// Keeps an accepted record and dials its addresses.
    func learned(_ record: SignedAddressRecord, from peer: IdentityPublicKey) {
        log.info(
            "learned addresses",
            [
                "peer": record.identity.fingerprintText, "from": peer.fingerprintText,
                "addresses": record.endpoints.map(\.description).joined(separator: ",")
            ])
        keep(record)
        // Every address in a record is the signer's claim (it may name any host): dialled
        // under the rate limit of unknown advertisements until one reaches the peer.
        dial.remember(
            record.identity, addresses: record.endpoints.map { DialAddress(host: $0.host, port: $0.port) },
            gossiped: true)
    }

    /// At start: the contacts' records kept from earlier runs, so they can be relayed
    /// before their subjects are back. Each is verified again (the store is not trusted
    /// more than the wire) and judged like a first-hand record. A store that cannot list
    /// them is logged: nothing is relayed until the subjects send their records again.
    func restore() {
        let stored: [[UInt8]]
        do { stored = try store.addressRecords() } catch {
            log.error(
                "kept address records not read; none is relayed until its peer sends it again",
                ["error": "\(error)"])
            return
        }
        var undecodable = 0
        defer {
            if undecodable > 0 {
                log.warning("kept address records that no longer verify were skipped", ["count": "\(undecodable)"])
            }
        }
        for bytes in stored {
            guard let record = try? SignedAddressRecord.decode(bytes) else {
                undecodable += 1
                continue
            }
            _ = gossip.received(
                record, from: record.identity, isContact: { [unowned self] in self.isContact($0) },
                nowMs: UInt64(max(0, nowMs)))
            gossip.sessionEnded(record.identity)  // the restore is no session of theirs
        }
    }

    /// A peer's blinded `contactTags` on `conn` (only its kept session, only a contact's or
    /// co-member's): what it may now be sent.
    func received(_ tags: ContactTags, on conn: PeerConnection) {
        guard let peer = sessions.activePeer(of: conn), mayGossip(with: peer) else { return }
        gossip.tagsReceived(tags, from: peer)
        relay()
    }

    /// Sends every record some session peer is now entitled to.
    func relay() {
        let peers = sessions.table.peers.filter {
            sessions.activeConnection(for: $0)?.remoteFeatures.contains(.addressGossip) ?? false
        }
        let rooms = host?.joinedRoomMembers() ?? []
        let due = gossip.deliveries(
            sessions: Array(peers), isContact: { [unowned self] in self.isContact($0) },
            sharedRoom: { p, x in rooms.contains { $0.contains(p) && $0.contains(x) } },
            nowMs: UInt64(max(0, nowMs)))
        for (to, record) in due { sessions.activeConnection(for: to)?.send(.addressRecord(record)) }
    }

    // MARK: parley doctor

    /// What `parley doctor` reports about reachability.
    func doctorFacts() -> DoctorFacts {
        let discovered = dial.planner.targets.values.filter { $0.source == .discovered }
        let unreachable = discovered.filter { t in
            t.failures > 0 && !(t.identity.map { sessions.table.isOnline($0) } ?? false)
        }.count
        return DoctorFacts(
            ownAdvertisementSeen: ownAdvertisementSeen, advertisements: discovered.count,
            unreachable: unreachable,
            staticPeers: dial.planner.targets.values.filter { $0.source == .configured }.count)
    }

    /// A connected peer the person verified that understands the dial-back probe
    /// (`DialBackWitness`), and its name.
    func dialBackCandidate() -> (IdentityPublicKey, String)? {
        let candidates = sessions.table.peers.map { peer in
            DialBackWitness.Candidate(
                identity: peer, verified: directory.peer(peer)?.trust == .verified,
                understandsProbe: sessions.activeConnection(for: peer)?.remoteFeatures.contains(.addressGossip)
                    ?? false)
        }
        guard let peer = DialBackWitness.choose(candidates) else { return nil }
        return (peer, directory.peer(peer)?.displayName ?? peer.fingerprintText)
    }
}

/// What `parley doctor` reports about this node's reachability.
struct DoctorFacts {
    var ownAdvertisementSeen: Bool
    var advertisements: Int
    var unreachable: Int
    var staticPeers: Int
}
