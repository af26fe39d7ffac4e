import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// A connection's handshake outcome and its end: `EstablishedSessionDecision` decides, in
/// its order (stopping, caps, spoof check, trust, tie-break), and this is the one
/// performer of its actions; a closed connection tells its dial target why no session came
/// of it (`DialAttemptEnd`) and, if it was a session, the dial planner and the host.
extension SessionDriver {
    /// The peer of `conn` if `conn` is the session kept for it (records on any other
    /// connection are ignored).
    func activePeer(of conn: PeerConnection) -> IdentityPublicKey? {
        guard let peer = conn.remoteIdentityKey, table.isActive(ObjectIdentifier(conn), for: peer) else {
            return nil
        }
        return peer
    }

    /// What this driver keeps about one finished handshake while its decision runs.
    private struct Handshook {
        let conn: PeerConnection
        let handle: ObjectIdentifier
        let link: NodeLink
        let remote: Card
        let peer: IdentityPublicKey
        let remoteBootID: [UInt8]
        /// Where an inbound connection came from (its caps); nil for our own dials.
        let source: SourceAddress?
        let standing: SessionTable<ObjectIdentifier>.Standing
    }

    /// The handshake on `conn` succeeded (`PeerConnectionDelegate.connectionEstablished`).
    func connectionEstablished(_ conn: PeerConnection) {
        let handle = ObjectIdentifier(conn)
        handshakeEnded(handle, source: conn.remoteAddress.hostPart)
        guard let est = conn.established, let link = links[handle] else {
            // Not one of ours (or already forgotten): nothing to decide about.
            conn.close(reason: .normal)
            return
        }
        let peer = est.remoteCard.identityKey
        // Inbound connections count against their source's caps; our own dials do not.
        let source = conn.direction == .inbound ? SourceAddress(conn.remoteAddress.hostPart) : nil
        let standing = directory.sessionStanding(of: peer)
        let facts = EstablishedSessionDecision.Facts(
            stopping: stopping,
            wouldAdmit: table.wouldAdmit(peer, source: source, standing: standing),
            advertised: AdvertisedIdentityCheck.check(claimed: link.expectedFingerprint, proven: peer),
            dialled: link.dialTarget != nil)
        let handshook = Handshook(
            conn: conn, handle: handle, link: link, remote: est.remoteCard, peer: peer,
            remoteBootID: est.remoteBootID, source: source, standing: standing)
        var decision = EstablishedSessionDecision()
        perform(decision.handshakeFinished(facts), &decision, handshook)
    }

    // MARK: The performer of `EstablishedSessionDecision.Action`

    private func perform(
        _ actions: [EstablishedSessionDecision.Action], _ decision: inout EstablishedSessionDecision,
        _ h: Handshook
    ) {
        for action in actions {
            switch action {
            case .refuse(let refusal):
                refuse(h, refusal)
            case .tellPlannerSpoofed:
                if let key = h.link.dialTarget { dial.spoofDetected(key) }
            case .tellPlannerProvedIdentity:
                if let key = h.link.dialTarget { dial.provedIdentity(key, identity: h.peer) }
            case .judgeTrust:
                // Without a host (a node torn down) nothing is trusted.
                let refusal =
                    host.map { $0.judgeTrust(of: h.remote, connection: h.conn, dialTarget: h.link.dialTarget) }
                    ?? (reason: .normal, text: "shutting down")
                perform(decision.trustJudged(refusal: refusal), &decision, h)
            case .establish:
                let side = SessionTieBreak.Side(direction: h.conn.direction, remoteBootID: h.remoteBootID)
                let kept = established(h.handle, peer: h.peer, side: side, source: h.source, standing: h.standing) {
                    activated(h)
                }
                perform(decision.tableDecided(kept: kept), &decision, h)
            case .startSession:
                host?.sessionStarted(h.conn, peer: h.peer)
            }
        }
    }

    private func refuse(_ h: Handshook, _ refusal: EstablishedSessionDecision.Refusal) {
        switch refusal {
        case .stopping:
            h.conn.close(reason: .normal)
        case .sessionLimit:
            attackLog.log(
                key: "sessions-full:" + (h.source?.network ?? "all"), "session limit reached; refusing",
                ["limit": "\(table.maxSessions)", "source": h.source?.address ?? "-"])
            h.conn.close(reason: .normal, text: "too many sessions")
        case .spoofed(let claimed):
            // The advertisement claimed one identity, the handshake proved another.
            attackLog.log(
                key: "spoof:" + h.conn.remoteAddress.hostPart,
                "SPOOFING: an mDNS advertisement claimed a fingerprint its handshake did not prove; not trusted",
                ["claimed": claimed, "proven": h.remote.fingerprint.description, "address": h.conn.remoteAddress])
            h.conn.close(reason: .notTrusted, text: "advertised fingerprint does not match")
        case .trust(let reason, let text):
            h.conn.close(reason: reason, text: text)
        }
    }

    /// The table made `h` the peer's session, before the peer is announced online.
    private func activated(_ h: Handshook) {
        if let key = h.link.dialTarget { dial.sessionUp(key, identity: h.peer, on: h.conn) }
        if let ports = host?.listenPorts, !ports.isEmpty {
            h.conn.send(.listenPorts(Array(ports.prefix(WireLimits.maxListenPorts))))
        }
        recordSeen(h.peer, address: h.link.dialTarget?.rawValue)
        log.info(
            "session up",
            [
                "peer": h.remote.displayName, "fingerprint": h.remote.fingerprint.description,
                "address": h.conn.remoteAddress, "direction": h.conn.direction.rawValue
            ])
    }

    /// When `peer` was last seen, and where we dialled it: what the expiry of unused keys
    /// and `peers.list` read. A store that cannot record it costs no session: the record
    /// keeps its older time (so an unused key may be forgotten sooner), and the failure is
    /// logged with the peer it concerns.
    private func recordSeen(_ peer: IdentityPublicKey, address: String?) {
        switch directory.touch(peer, at: clock.wallMilliseconds(), address: address) {
        case .recorded:
            break
        case .notRecorded(let error):
            log.error(
                "could not record when the peer was last seen; its session goes on",
                ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }

    // MARK: A connection closed

    /// The connection `conn` closed, in its handshake or as a session
    /// (`PeerConnectionDelegate.connectionClosed`).
    func connectionClosed(_ conn: PeerConnection, error: Error?) {
        let handle = ObjectIdentifier(conn)
        handshakeEnded(handle, source: conn.remoteAddress.hostPart)
        if activePeer(of: conn) != nil { host?.sessionClosing(conn) }
        let link = links.removeValue(forKey: handle)
        if let error, conn.established == nil {
            // A failed handshake: log once per source address, never per packet.
            attackLog.log(
                key: conn.remoteAddress.hostPart, "handshake failed",
                ["address": conn.remoteAddress, "error": "\(error)"])
        } else if let error {
            log.info("session closed", ["address": conn.remoteAddress, "error": "\(error)"])
        }
        if let key = link?.dialTarget {
            // Watchers left after a session came up were told at activation: any still
            // here waited for an attempt that ended without a session.
            let reason = conn.remoteCloseReason
            dial.attemptFailed(
                key,
                DialAttemptEnd.describe(
                    peerClose: reason, handshook: conn.established != nil, error: error.map { "\($0)" },
                    address: key.rawValue),
                refusedByTrust: DialAttemptEnd.refusedByTrust(reason))
        }
        let wasSession = closed(
            handle, peer: conn.remoteIdentityKey, peerKeptAnother: conn.remoteCloseReason == .duplicate)
        guard wasSession, let peer = conn.remoteIdentityKey else { return }
        log.info("session down", ["peer": peer.fingerprintText])
        dial.sessionDown(peer)
        host?.sessionEnded(peer)
    }

    // MARK: Unused identities

    /// Forgets keys pinned on first use (or held) that never exchanged a message and were
    /// not seen for `lifetime`, once per `interval` (`PeerDirectory.expireUnused`). Peers
    /// online now and co-members of joined rooms are kept: a member's name learnt from its
    /// card through the room stays while both are in the room, however long it is away.
    func expireUnusedIdentities(now: MonotonicInstant, lifetime: Duration, every interval: Duration) {
        let before = clock.wallMilliseconds() - lifetime.wholeMilliseconds
        do {
            guard
                let count = try directory.expireUnused(
                    now: now, every: interval, lastSeenBefore: before,
                    keep: Set(table.peers).union(host?.coMembers() ?? [])),
                count > 0
            else { return }
            log.info("forgot identities that were never used", ["count": "\(count)"])
        } catch {
            log.error("could not expire unused identities", ["error": "\(error)"])
        }
    }
}
