import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Connections and sessions: routes the connection events to `SessionDriver` (admission,
/// the handshake's outcome through `EstablishedSessionDecision`, the close, the keepalive
/// tick), and is its `SessionHost`: the trust decision and what starts and ends with a
/// session in the other drivers, in their order.
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

    /// The connection that carries the session with `peer`, if one is up.
    func activeConnection(for peer: IdentityPublicKey) -> PeerConnection? {
        sessionDriver.activeConnection(for: peer)
    }

    /// The peer of `conn` if `conn` is the session kept for it (records on any other
    /// connection are ignored).
    func activePeer(of conn: PeerConnection) -> IdentityPublicKey? { sessionDriver.activePeer(of: conn) }

    func isOnline(_ identity: IdentityPublicKey) -> Bool { sessionDriver.table.isOnline(identity) }

    // MARK: PeerConnectionDelegate: the handshake's outcome

    func connectionEstablished(_ conn: PeerConnection) { sessionDriver.connectionEstablished(conn) }

    func connectionClosed(_ conn: PeerConnection, error: Error?) { sessionDriver.connectionClosed(conn, error: error) }

    /// Forgets unused keys when due (`SessionDriver.expireUnusedIdentities`).
    func expireUnusedIdentitiesIfDue(now: MonotonicInstant) {
        sessionDriver.expireUnusedIdentities(
            now: now, lifetime: options.unusedIdentityLifetime, every: options.unusedIdentityCheckInterval)
    }

    // MARK: Keepalive

    /// The daemon-wide periodic tick (every `KeepalivePolicy.tickInterval`, 5 s by
    /// default): the expiry of unused identities, liveness of every session
    /// (`KeepalivePolicy.sweep`) and the ack-timeout resend (`SessionDriver`), room sync's
    /// tick and the daemon's chore. One timer for all of them, so an idle daemon wakes
    /// once per tick whatever it holds.
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
        sessionDriver.resendTimedOut(now: now)
        rooms.tick(now: now)
        roomSyncTick()
        observers.onTick?()
    }
}

// MARK: - SessionHost: the other drivers' steps, in order

extension Node: SessionHost {
    func judgeTrust(of card: Card, connection conn: PeerConnection, dialTarget: DialTargetKey?)
        -> (reason: CloseReason, text: String)?
    {
        switch admitTrust(of: card, connection: conn, dialTarget: dialTarget) {
        case .keep: return nil
        case .refuse(let reason, let text): return (reason, text)
        }
    }

    var listenPorts: [UInt16] { gossipDriver.listenPorts }

    func sessionStarted(_ conn: PeerConnection, peer: IdentityPublicKey) {
        announceStatus(on: conn)
        startGossip(on: conn, peer: peer)
        pump(conn)
        sendPendingReadReceipts(conn)
        filesSessionStarted(conn)
        roomSyncSessionStarted(conn, peer: peer)
    }

    func sessionClosing(_ conn: PeerConnection) { filesSessionEnded(conn) }

    func sessionEnded(_ peer: IdentityPublicKey) {
        gossipDriver.gossip.sessionEnded(peer)
        roomSyncSessionEnded(peer)
        rooms.sessionEnded(peer)
    }

    func coMembers() -> Set<IdentityPublicKey> { Set(joinedRoomMembers().flatMap { $0 }) }
}

extension IdentityPublicKey {
    /// The grouped fingerprint, for logs.
    var fingerprintText: String { Fingerprint(self).description }
}
