import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Connections and sessions: admission of inbound connections, the handshake's outcome
/// (spoof check, trust, the session table), presence, and the keepalive tick.
extension Node {
    // MARK: Connections

    /// Admission of a new inbound TCP connection (before any byte is read).
    func admitInbound(remote: SocketAddress?) -> Bool {
        loop.preconditionInEventLoop()
        guard !sessionDriver.stopping else { return false }
        let source = remote?.ipAddress ?? "?"
        let verdict = sessionDriver.admit(source: source)
        guard verdict == .accept else {
            attackLog.log(
                key: "admit:" + source, "refusing inbound connections", ["source": source, "why": "\(verdict)"])
            return false
        }
        return true
    }

    /// A handler for a new TCP connection in either direction.
    func makeConnection(
        direction: ConnectionDirection, dialedAddress target: DialTargetKey?,
        expectedFingerprint: String? = nil
    ) -> PeerConnection {
        // The handshake is built when the connection becomes active, so it uses the
        // card and keys current then (a rotation or rename in between is honoured).
        let clock = self.clock
        let conn = PeerConnection(
            direction: direction, handshakeTimeout: options.handshakeTimeout,
            now: { clock.monotonicNow().deadline }
        ) { [unowned self] in
            SessionHandshake(
                role: direction == .outbound ? .initiator : .responder,
                localCard: self.ownIdentity.card, staticKey: self.ownIdentity.keys.noiseStatic,
                bootID: self.ownIdentity.bootID,
                features: .supported, presharedKey: self.ownIdentity.networkKey, now: UInt64(max(0, self.nowMs / 1000)))
        }
        conn.delegate = self
        sessionDriver.links[ObjectIdentifier(conn)] = NodeLink(
            connection: conn, dialTarget: target,
            expectedFingerprint: expectedFingerprint,
            holdsAdmission: direction == .inbound,
            window: SendWindow(limits: options.window))
        return conn
    }

    private func releaseAdmission(_ conn: PeerConnection) {
        sessionDriver.handshakeEnded(ObjectIdentifier(conn), source: conn.remoteAddress.hostPart)
    }

    /// The connection that carries the session with `peer`, if one is up.
    func activeConnection(for peer: IdentityPublicKey) -> PeerConnection? {
        sessionDriver.activeConnection(for: peer)
    }

    /// The peer of `conn` if `conn` is the session kept for it (records on any other
    /// connection are ignored).
    func activePeer(of conn: PeerConnection) -> IdentityPublicKey? {
        guard let peer = conn.remoteIdentityKey, sessionDriver.table.isActive(ObjectIdentifier(conn), for: peer) else {
            return nil
        }
        return peer
    }

    func isOnline(_ identity: IdentityPublicKey) -> Bool { sessionDriver.table.isOnline(identity) }

    // MARK: PeerConnectionDelegate: the handshake's outcome

    func connectionEstablished(_ conn: PeerConnection) {
        releaseAdmission(conn)
        let handle = ObjectIdentifier(conn)
        guard let est = conn.established, let link = sessionDriver.links[handle], !sessionDriver.stopping else {
            conn.close(reason: .normal)
            return
        }
        let remote = est.remoteCard
        let peer = remote.identityKey
        // Inbound connections count against their source's caps; our own dials do not.
        let source = conn.direction == .inbound ? SourceAddress(conn.remoteAddress.hostPart) : nil
        let standing = sessionStanding(of: peer)
        guard sessionDriver.table.wouldAdmit(peer, source: source, standing: standing) else {
            // Before the trust decision: a refused stranger's key is not pinned.
            attackLog.log(
                key: "sessions-full:" + (source?.network ?? "all"), "session limit reached; refusing",
                ["limit": "\(sessionDriver.table.maxSessions)", "source": source?.address ?? "-"])
            conn.close(reason: .normal, text: "too many sessions")
            return
        }
        if case .spoofed(let expected) = AdvertisedIdentityCheck.check(
            claimed: link.expectedFingerprint, proven: peer)
        {
            // The advertisement claimed one identity, the handshake proved another.
            attackLog.log(
                key: "spoof:" + conn.remoteAddress.hostPart,
                "SPOOFING: an mDNS advertisement claimed a fingerprint its handshake did not prove; not trusted",
                ["claimed": expected, "proven": remote.fingerprint.description, "address": conn.remoteAddress])
            conn.close(reason: .notTrusted, text: "advertised fingerprint does not match")
            if let key = link.dialTarget { dialDriver.planner.spoofDetected(key) }
            return
        }
        if let key = link.dialTarget {
            perform(dialDriver.planner.provedIdentity(key, identity: peer, random: dialDriver.random))
        }

        switch admitTrust(of: remote, connection: conn, dialTarget: link.dialTarget) {
        case .keep: break
        case .refuse(let reason, let text):
            conn.close(reason: reason, text: text)
            return
        }

        let side = SessionTieBreak.Side(direction: conn.direction, remoteBootID: est.remoteBootID)
        let kept = sessionDriver.established(handle, peer: peer, side: side, source: source, standing: standing) {
            if let key = link.dialTarget {
                dialDriver.planner.sessionUp(key, identity: peer)
                // Told once the peer shows it kept the session, not at our end of the
                // handshake: its trust decision comes after (`confirmPeerKeepsSession`).
                if dialDriver.isWatched(key) {
                    conn.confirmPeerKeepsSession(probe: UInt64(dialDriver.random.uniform(below: .max))) { [weak self] in
                        self?.finishDialWatch(key, .connected(identity: peer))
                    }
                }
                // The address we reached it at is one to try again after a restart.
                rememberAddresses(of: peer, [conn.remoteAddress])
            }
            if !gossipDriver.listenPorts.isEmpty {
                conn.send(.listenPorts(Array(gossipDriver.listenPorts.prefix(WireLimits.maxListenPorts))))
            }
            try? store.touchPeer(identity: peer, at: nowMs, address: link.dialTarget?.rawValue)
            log.info(
                "session up",
                [
                    "peer": remote.displayName, "fingerprint": remote.fingerprint.description,
                    "address": conn.remoteAddress, "direction": conn.direction.rawValue
                ])
        }
        // Closed as a duplicate, or refused (the driver closed it): nothing starts on it.
        guard kept else { return }
        announceStatus(on: conn)
        startGossip(on: conn, peer: peer)
        pump(conn)
        sendPendingReadReceipts(conn)
        filesSessionStarted(conn)
        roomSyncSessionStarted(conn, peer: peer)
    }

    func connectionClosed(_ conn: PeerConnection, error: Error?) {
        let handle = ObjectIdentifier(conn)
        releaseAdmission(conn)
        if activePeer(of: conn) != nil { filesSessionEnded(conn) }
        let link = sessionDriver.links.removeValue(forKey: handle)
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
            dialDriver.attemptFailed(
                key, Self.whyNoSession(conn, error: error, address: key.rawValue),
                refusedByTrust: reason == .keyChangePending || reason == .notTrusted)
        }
        let wasSession = sessionDriver.closed(
            handle, peer: conn.remoteIdentityKey,
            peerKeptAnother: conn.remoteCloseReason == .duplicate)
        guard wasSession, let peer = conn.remoteIdentityKey else { return }
        log.info("session down", ["peer": peer.fingerprintText])
        perform(dialDriver.planner.sessionDown(peer, random: dialDriver.random))
        gossipDriver.gossip.sessionEnded(peer)
        roomSyncSessionEnded(peer)
        rooms.sessionEnded(peer)
    }

    /// Forgets keys pinned on first use (or held) that never exchanged a message and were
    /// not seen for `options.unusedIdentityLifetime`, once per
    /// `options.unusedIdentityCheckInterval` (`PeerDirectory.expireUnused`).
    /// Co-members of joined rooms are kept: a member's name learnt from its card through the
    /// room (room cards) stays while both are in the room, however long it is away.
    func expireUnusedIdentitiesIfDue(now: MonotonicInstant) {
        let before = nowMs - options.unusedIdentityLifetime.wholeMilliseconds
        do {
            guard
                let count = try peerDirectory.expireUnused(
                    now: now, every: options.unusedIdentityCheckInterval, lastSeenBefore: before,
                    keep: Set(sessionDriver.table.peers).union(coMembers())),
                count > 0
            else { return }
            log.info("forgot identities that were never used", ["count": "\(count)"])
        } catch {
            log.error("could not expire unused identities", ["error": "\(error)"])
        }
    }

    private func coMembers() -> Set<IdentityPublicKey> {
        Set(joinedRoomMembers().flatMap { $0 })
    }

    /// A stranger (unverified, never exchanged a message) or a known peer, for the session
    /// table's eviction order.
    func sessionStanding(of peer: IdentityPublicKey) -> SessionTable<ObjectIdentifier>.Standing {
        peerDirectory.sessionStanding(of: peer)
    }

    // MARK: Keepalive

    /// The daemon-wide periodic tick (every `KeepalivePolicy.tickInterval`, 5 s by
    /// default): liveness of every session (`KeepalivePolicy.sweep`), the ack-timeout
    /// resend of every send window, and the hourly expiry of unused identities. One timer
    /// for all of them, so an idle daemon wakes once per tick whatever it holds.
    func keepaliveTick() {
        let now = clock.monotonicNow()
        expireUnusedIdentitiesIfDue(now: now)
        // Lets pumps skip the room outboxes once nothing is queued in them.
        if store.roomOutboxesMayHaveWork {
            do { try store.checkRoomOutboxesEmpty() } catch {
                log.error("could not check the room outboxes", ["error": "\(error)"])
            }
        }
        sessionDriver.keepaliveSweep(options.keepalive, now: now)
        for peer in sessionDriver.table.peers {
            guard let handle = sessionDriver.table.handle(for: peer), let conn = sessionDriver.links[handle]?.connection
            else { continue }
            if sessionDriver.links[handle]?.window.resetIfAckTimedOut(now: now) == true { pump(conn) }
        }
        rooms.tick(now: now)
        roomSyncTick()
        observers.onTick?()
    }
}

extension IdentityPublicKey {
    /// The grouped fingerprint, for logs.
    var fingerprintText: String { Fingerprint(self).description }
}
