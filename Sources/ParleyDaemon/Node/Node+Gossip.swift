import NIOCore
import ParleyCore
import ParleyNodeCore

/// Address gossip among contacts, dial-back and `parley doctor`'s facts: routed to
/// `GossipDriver` (docs/PROTOCOL.md "Address gossip"), whose `GossipHost` the node is.
extension Node: GossipHost {
    /// A contact (`GossipDriver.isContact`): the only identities whose addresses we keep
    /// or relay, and the only peers we relay to.
    func isContact(_ identity: IdentityPublicKey) -> Bool { gossipDriver.isContact(identity) }

    func contactSet() -> Set<IdentityPublicKey> { gossipDriver.contactSet() }

    /// The session with `peer` is up on `conn`: give it our record and our tags.
    func startGossip(on conn: PeerConnection, peer: IdentityPublicKey) {
        gossipDriver.sessionStarted(on: conn, peer: peer)
    }

    func connection(_ conn: PeerConnection, receivedAddressRecord record: SignedAddressRecord) {
        gossipDriver.received(record, on: conn)
    }

    /// Keeps an accepted record and dials its addresses.
    func learnedAddressRecord(_ record: SignedAddressRecord, from peer: IdentityPublicKey) {
        gossipDriver.learned(record, from: peer)
    }

    /// At start: the contacts' records kept from earlier runs (`GossipDriver.restore`).
    func restoreAddressRecords() { gossipDriver.restore() }

    func connection(_ conn: PeerConnection, receivedContactTags tags: ContactTags) {
        gossipDriver.received(tags, on: conn)
    }

    /// Sends every record some session peer is now entitled to.
    func relayAddressRecords() { gossipDriver.relay() }

    /// Our own record: the addresses we listen at, signed now and then.
    func ownAddressRecord() -> SignedAddressRecord? { gossipDriver.ownAddressRecord() }

    /// Where others can reach our listeners (`GossipDriver.listeningEndpoints`).
    static func listeningEndpoints(_ bound: [String]) -> [SignedAddressRecord.Endpoint] {
        GossipDriver.listeningEndpoints(bound)
    }
}

// MARK: - Dial-back and doctor facts (parley doctor)

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

    typealias DoctorFacts = ParleyDaemon.DoctorFacts

    func doctorFacts() -> DoctorFacts { gossipDriver.doctorFacts() }

    /// A connected peer the person verified that understands the dial-back probe.
    func dialBackCandidate() -> (IdentityPublicKey, String)? { gossipDriver.dialBackCandidate() }
}
