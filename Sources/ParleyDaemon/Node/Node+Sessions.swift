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
        guard !stopping else { return false }
        let source = remote?.ipAddress ?? "?"
        let verdict = admission.admit(source: source, now: clock.monotonicNow())
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
                localCard: self.card, staticKey: self.keys.noiseStatic, bootID: self.bootID,
                features: .supported, presharedKey: self.networkKey, now: UInt64(max(0, self.nowMs / 1000)))
        }
        conn.delegate = self
        links[ObjectIdentifier(conn)] = NodeLink(
            connection: conn, dialTarget: target,
            expectedFingerprint: expectedFingerprint,
            holdsAdmission: direction == .inbound,
            window: SendWindow(limits: options.window))
        return conn
    }

    private func releaseAdmission(_ conn: PeerConnection) {
        let h = ObjectIdentifier(conn)
        guard links[h]?.holdsAdmission == true else { return }
        links[h]?.holdsAdmission = false
        admission.handshakeEnded(source: conn.remoteAddress.hostPart)
    }

    /// The connection that carries the session with `peer`, if one is up.
    func activeConnection(for peer: IdentityPublicKey) -> PeerConnection? {
        sessions.handle(for: peer).flatMap { links[$0]?.connection }
    }

    func activeConnection(for identity: String) -> PeerConnection? {
        IdentityPublicKey(hex: identity).flatMap(activeConnection(for:))
    }

    /// The peer of `conn` if `conn` is the session kept for it (records on any other
    /// connection are ignored).
    func activePeer(of conn: PeerConnection) -> IdentityPublicKey? {
        guard let peer = conn.remoteIdentityKey, sessions.isActive(ObjectIdentifier(conn), for: peer) else {
            return nil
        }
        return peer
    }

    func isOnline(_ identity: String) -> Bool { IdentityPublicKey(hex: identity).map(sessions.isOnline) ?? false }

    // MARK: PeerConnectionDelegate: the handshake's outcome

    func connectionEstablished(_ conn: PeerConnection) {
        releaseAdmission(conn)
        let handle = ObjectIdentifier(conn)
        guard let est = conn.established, let link = links[handle], !stopping else {
            conn.close(reason: .normal)
            return
        }
        let remote = est.remoteCard
        let peer = remote.identityKey
        // Inbound connections count against their source's caps; our own dials do not.
        let source = conn.direction == .inbound ? SourceAddress(conn.remoteAddress.hostPart) : nil
        let standing = sessionStanding(of: peer)
        guard sessions.wouldAdmit(peer, source: source, standing: standing) else {
            // Before the trust decision: a refused stranger's key is not pinned.
            attackLog.log(
                key: "sessions-full:" + (source?.network ?? "all"), "session limit reached; refusing",
                ["limit": "\(sessions.maxSessions)", "source": source?.address ?? "-"])
            conn.close(reason: .normal, text: "too many sessions")
            return
        }
        if let expected = link.expectedFingerprint, expected != remote.fingerprint.compact {
            // The advertisement claimed one identity, the handshake proved another.
            attackLog.log(
                key: "spoof:" + conn.remoteAddress.hostPart,
                "SPOOFING: an mDNS advertisement claimed a fingerprint its handshake did not prove; not trusted",
                ["claimed": expected, "proven": remote.fingerprint.description, "address": conn.remoteAddress])
            conn.close(reason: .notTrusted, text: "advertised fingerprint does not match")
            if let key = link.dialTarget { dialPlanner.spoofDetected(key) }
            return
        }
        if let key = link.dialTarget { perform(dialPlanner.provedIdentity(key, identity: peer, random: random)) }

        switch admitTrust(of: remote, connection: conn, dialTarget: link.dialTarget) {
        case .keep: break
        case .refuse(let reason, let text):
            conn.close(reason: reason, text: text)
            return
        }

        let side = SessionTieBreak.Side(direction: conn.direction, remoteBootID: est.remoteBootID)
        for action in sessions.established(handle, peer: peer, side: side, source: source, standing: standing) {
            switch action {
            case .refuseFull(let h), .refuseSourceFull(let h):
                links[h]?.connection.close(reason: .normal, text: "too many sessions")
            case let .evict(h, stranger):
                log.info(
                    "session of a stranger closed to make room for a known peer", ["peer": stranger.fingerprintText])
                links[h]?.connection.close(reason: .normal, text: "making room")
            case .peerOffline(let p): emit(.peerOffline(identity: p.hex))
            case .closeDuplicate(let h):
                links[h]?.connection.close(reason: .duplicate, text: "another session was kept")
                if h == handle { return }
            case .activate:
                offlineTimers.removeValue(forKey: peer)?.cancel()
                if let key = link.dialTarget {
                    dialPlanner.sessionUp(key, identity: peer)
                    // Told once the peer shows it kept the session, not at our end of the
                    // handshake: its trust decision comes after (`confirmPeerKeepsSession`).
                    if dialWatchers[key] != nil {
                        conn.confirmPeerKeepsSession(probe: UInt64(random.uniform(below: .max))) { [weak self] in
                            self?.finishDialWatch(key, .connected(identity: peer.hex))
                        }
                    }
                    // The address we reached it at is one to try again after a restart.
                    rememberAddresses(of: peer, [conn.remoteAddress])
                }
                if !listenPorts.isEmpty {
                    conn.send(.listenPorts(Array(listenPorts.prefix(WireLimits.maxListenPorts))))
                }
                try? store.touchPeer(identity: peer.hex, at: nowMs, address: link.dialTarget?.rawValue)
                log.info(
                    "session up",
                    [
                        "peer": remote.displayName, "fingerprint": remote.fingerprint.description,
                        "address": conn.remoteAddress, "direction": conn.direction.rawValue
                    ])
            case .peerOnline(let p): emit(.peerOnline(identity: p.hex))
            case .scheduleOfflineCheck: break
            }
        }
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
            finishDialWatch(key, .failed(Self.whyNoSession(conn, error: error, address: key.rawValue)))
            perform(dialPlanner.attemptFailed(key, random: random))
            if let r = conn.remoteCloseReason, r == .keyChangePending || r == .notTrusted {
                // Refused by the peer's trust policy: back off instead of knocking every half second.
                perform(dialPlanner.refusedByPeerTrust(key, random: random))
            }
        }
        let actions = sessions.closed(
            handle, peer: conn.remoteIdentityKey,
            peerKeptAnother: conn.remoteCloseReason == .duplicate,
            stopping: stopping, now: clock.monotonicNow())
        guard !actions.isEmpty, let peer = conn.remoteIdentityKey else { return }
        log.info("session down", ["peer": peer.fingerprintText])
        perform(actions)
        perform(dialPlanner.sessionDown(peer, random: random))
        gossip.sessionEnded(peer)
        roomSyncSessionEnded(peer)
    }

    /// Performs the session table's actions that are not part of establishing a session.
    private func perform(_ actions: [SessionTable<ObjectIdentifier>.Action]) {
        for action in actions {
            switch action {
            case .peerOffline(let p):
                peerStatuses[p] = nil
                statusThrottle.forget(p)
                emit(.peerOffline(identity: p.hex))
            case .scheduleOfflineCheck(let p, let due):
                offlineTimers[p]?.cancel()
                offlineTimers[p] = loop.scheduleTask(deadline: due.deadline) { [weak self] in
                    guard let self else { return }
                    self.offlineTimers[p] = nil
                    self.perform(self.sessions.offlineCheckDue(peer: p, now: self.clock.monotonicNow()))
                }
            case .activate, .closeDuplicate, .refuseFull, .refuseSourceFull, .evict, .peerOnline: break
            }
        }
    }

    /// Forgets keys pinned on first use (or held) that never exchanged a message and were
    /// not seen for `options.unusedIdentityLifetime` (Store.expireUnusedPeers).
    func expireUnusedIdentities() {
        let before = nowMs - options.unusedIdentityLifetime.wholeMilliseconds
        do {
            let expired = try store.expireUnusedPeers(lastSeenBefore: before, keep: Set(sessions.peers.map(\.hex)))
            guard !expired.isEmpty else { return }
            peerCache = nil
            log.info("forgot identities that were never used", ["count": "\(expired.count)"])
        } catch {
            log.error("could not expire unused identities", ["error": "\(error)"])
        }
    }

    /// A stranger (unverified, never exchanged a message) or a known peer, for the session
    /// table's eviction order.
    func sessionStanding(of peer: IdentityPublicKey) -> SessionTable<ObjectIdentifier>.Standing {
        guard let record = peerRecord(peer.hex) else { return .stranger }
        if record.trust == .verified { return .known }
        return ((try? store.hasMessages(with: peer.hex)) ?? true) ? .known : .stranger
    }

    // MARK: Keepalive

    /// The daemon-wide periodic tick (every `KeepalivePolicy.tickInterval`, 5 s by
    /// default): liveness of every session (`KeepalivePolicy.sweep`), the ack-timeout
    /// resend of every send window, and the hourly expiry of unused identities. One timer
    /// for all of them, so an idle daemon wakes once per tick whatever it holds.
    func keepaliveTick() {
        let now = clock.monotonicNow()
        if lastIdentityExpiry.map({ now - $0 >= options.unusedIdentityCheckInterval }) ?? true {
            lastIdentityExpiry = now
            expireUnusedIdentities()
        }
        // Lets pumps skip the room outboxes once nothing is queued in them.
        if store.roomOutboxesMayHaveWork {
            do { try store.checkRoomOutboxesEmpty() } catch {
                log.error("could not check the room outboxes", ["error": "\(error)"])
            }
        }
        // One sweep over every session per tick: all pings due now leave in this wake-up.
        let policy = options.keepalive
        var due: [(IdentityPublicKey, KeepalivePolicy.SessionLiveness)] = []
        due.reserveCapacity(sessions.count)
        for peer in sessions.peers {
            guard let handle = sessions.handle(for: peer), let link = links[handle] else { continue }
            due.append((peer, link.liveness))
        }
        let sweep = policy.sweep(due, now: now)
        for peer in sweep.dead {
            guard let conn = activeConnection(for: peer) else { continue }
            // No close record (docs/PROTOCOL.md "Liveness"): a peer that is in fact
            // alive must see a lost connection, which it redials, not a goodbye.
            log.info("peer silent; dropping the connection", ["peer": peer.fingerprintText])
            conn.drop()
        }
        for peer in sweep.ping {
            guard let handle = sessions.handle(for: peer), let conn = links[handle]?.connection else { continue }
            links[handle]?.pinged(at: now)
            conn.send(.ping(now.nanoseconds))
        }
        for peer in sessions.peers {
            guard let handle = sessions.handle(for: peer), let conn = links[handle]?.connection else { continue }
            if links[handle]?.window.resetIfAckTimedOut(now: now) == true { pump(conn) }
        }
        roomSyncTick()
        onTick?()
    }
}

extension IdentityPublicKey {
    /// The grouped fingerprint, for logs.
    var fingerprintText: String { Fingerprint(self).description }
}
