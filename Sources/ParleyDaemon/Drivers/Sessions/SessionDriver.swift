import NIOCore
import ParleyCore
import ParleyNodeCore

/// Sessions, links and presence: every open connection (`NodeLink`), admission of inbound
/// connections, what becomes of a finished handshake (`EstablishedSessionDecision`:
/// caps, spoof check, trust, tie-break; +Establishment.swift) and of a closed connection,
/// the session table (one session per peer, the tie-break, the caps, the offline
/// debounce), and what the control side sees of presence (who is online, each online
/// peer's status line), the keepalive tick that checks every session's liveness and
/// resends what an ack timed out on, and whether the node is stopping.
///
/// It is the ONE performer of `SessionTable.Action` and of
/// `EstablishedSessionDecision.Action`: whether a peer went offline because its connection
/// closed, because the debounce ran out or because a known peer's session evicted it, the
/// same code forgets its status line and tells the observers. (Two performers that
/// disagreed left an evicted stranger's status line shown.) Dial targets hear through the
/// `DialDriver` it is given; the rest of the node (trust, and what starts and ends with a
/// session) through its `SessionHost`.
///
/// Its state is its own and lives on the node's event loop, which serialises every entry
/// point (the loop is its lock, as a mutex per subsystem is wireguard-go's). Time comes from
/// the injected clock, so tests drive the debounce with a mock clock.
final class SessionDriver {
    let loop: EventLoop
    let clock: any NodeClock
    let log: Logger

    /// Every open connection, handshaking or established, with what the node keeps about it.
    var links: [ObjectIdentifier: NodeLink] = [:]
    /// The decisions about sessions (ParleyNodeCore). Changed only through this driver's
    /// events, whose actions it performs (`promote` changes no presence, so callers may).
    var table: SessionTable<ObjectIdentifier>
    /// Inbound connections per source while they handshake.
    private var admission = AdmissionControl()
    /// Each online peer's latest status line, shown at most once per second per peer.
    private var statusLines = StatusLines()
    /// The offline debounce timers (`SessionTable.Action.scheduleOfflineCheck`).
    private var offlineTimers: [IdentityPublicKey: Scheduled<Void>] = [:]
    /// Where presence changes go (the node's observers).
    var emit: (NodeEvent) -> Void = { _ in }
    /// True once the node began to stop: no connection is taken any more, and a closing
    /// session takes its peer offline at once (no debounce).
    private(set) var stopping = false
    /// The daemon-wide keepalive tick (`KeepalivePolicy.tickInterval`): one timer for every
    /// session, whatever the node holds.
    private var tick: RepeatedTask?
    /// Security events (session floods, spoofed advertisements, failed handshakes): logged
    /// once per source per minute.
    let attackLog: RateLimitedLog
    /// Dial targets hear what became of the connections dialled for them.
    let dial: DialDriver
    /// The pinned peers: a peer's standing (stranger or known), when it was last seen.
    let directory: PeerDirectory
    /// The rest of the node: trust, and what starts and ends with a session (`Node`).
    weak var host: (any SessionHost)?

    init(
        table: SessionTable<ObjectIdentifier>, loop: EventLoop, clock: any NodeClock, log: Logger,
        attackLog: RateLimitedLog, dial: DialDriver, directory: PeerDirectory
    ) {
        self.table = table
        self.loop = loop
        self.clock = clock
        self.log = log
        self.attackLog = attackLog
        self.dial = dial
        self.directory = directory
    }

    /// Each online peer's latest status line (forgotten when it goes offline).
    var statuses: [IdentityPublicKey: PresenceStatus] { statusLines.latest }

    /// The connection that carries the session with `peer`, if one is up.
    func activeConnection(for peer: IdentityPublicKey) -> PeerConnection? {
        table.handle(for: peer).flatMap { links[$0]?.connection }
    }

    /// A message was exchanged with `peer` (or the user verified it): not a stranger any more.
    func promote(_ peer: IdentityPublicKey) { table.promote(peer) }

    // MARK: Events

    /// A new inbound TCP connection from `source` (before any byte is read): taken, or
    /// refused by `AdmissionControl` (rate per source, handshakes in progress).
    func admit(source: String) -> AdmissionControl.Verdict {
        admission.admit(source: source, now: clock.monotonicNow())
    }

    /// Inbound connections still in their handshake (tests, status).
    var handshaking: Int { admission.handshakingTotal }

    /// The handshake of the connection `handle` from `source` ended, either way: an
    /// inbound one gives back its admission slot (once).
    func handshakeEnded(_ handle: ObjectIdentifier, source: String) {
        guard links[handle]?.holdsAdmission == true else { return }
        links[handle]?.holdsAdmission = false
        admission.handshakeEnded(source: source)
    }

    /// A connection passed its handshake and the trust decision: the table decides whether
    /// it is kept. `activated` runs when it is, before the peer is announced online (so
    /// what observers read of the peer is already up to date). Returns true if `handle`
    /// now carries the session with `peer`.
    func established(
        _ handle: ObjectIdentifier, peer: IdentityPublicKey, side: SessionTieBreak.Side,
        source: SourceAddress?, standing: SessionTable<ObjectIdentifier>.Standing,
        activated: () -> Void = {}
    ) -> Bool {
        let actions = table.established(handle, peer: peer, side: side, source: source, standing: standing)
        perform(actions) { h in
            guard h == handle else { return }
            offlineTimers.removeValue(forKey: peer)?.cancel()
            activated()
        }
        return actions.contains(.activate(handle))
    }

    /// A connection closed. Returns true if it was `peer`'s session (presence changes, or
    /// will after the debounce).
    func closed(_ handle: ObjectIdentifier, peer: IdentityPublicKey?, peerKeptAnother: Bool) -> Bool {
        let actions = table.closed(
            handle, peer: peer, peerKeptAnother: peerKeptAnother, stopping: stopping, now: clock.monotonicNow())
        perform(actions)
        return !actions.isEmpty
    }

    /// Runs `body` every `period` (the node's keepalive tick, which sweeps the sessions
    /// with `keepaliveSweep` among its chores) until `stop`.
    func startTicking(every period: Duration, _ body: @escaping () -> Void) {
        tick?.cancel()
        tick = loop.scheduleRepeatedTask(initialDelay: period.timeAmount, delay: period.timeAmount) { _ in body() }
    }

    /// The node stops: the tick ends and no session is taken from now on.
    func stop() {
        stopping = true
        tick?.cancel()
        tick = nil
    }

    /// A peer's `status` record on its session. A change is shown at most once per
    /// `StatusThrottle.minInterval`; a held one is shown when the interval ends, if the
    /// peer is still online then.
    func statusReceived(_ status: PresenceStatus, from sender: IdentityPublicKey) {
        guard statusLines.latest[sender] != status else { return }
        statusLines.latest[sender] = status
        switch statusLines.throttle.received(from: sender, now: clock.monotonicNow()) {
        case .show:
            emit(.peerStatus(identity: sender, status: status.text))
        case .holdUntil(let due):
            loop.scheduleTask(deadline: due.deadline) { [weak self] in
                guard let self else { return }
                self.statusLines.throttle.due(sender, now: self.clock.monotonicNow())
                if let latest = self.statusLines.latest[sender] {
                    self.emit(.peerStatus(identity: sender, status: latest.text))
                }
            }
        case .held:
            break
        }
    }

    /// One liveness sweep over every session (`KeepalivePolicy.sweep`): all pings due now
    /// leave in this wake-up, and a peer silent past dead-after loses its connection.
    func keepaliveSweep(_ policy: KeepalivePolicy, now: MonotonicInstant) {
        var due: [(IdentityPublicKey, KeepalivePolicy.SessionLiveness)] = []
        due.reserveCapacity(table.count)
        for peer in table.peers {
            guard let handle = table.handle(for: peer), let link = links[handle] else { continue }
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
            guard let handle = table.handle(for: peer), let conn = links[handle]?.connection else { continue }
            links[handle]?.pinged(at: now)
            conn.send(.ping(now.nanoseconds))
        }
    }

    /// The ack-timeout resend: every session whose send window waited past its ack timeout
    /// starts over (`SendWindow.resetIfAckTimedOut`) and is pumped again, so what the peer
    /// never acknowledged is written again.
    func resendTimedOut(now: MonotonicInstant) {
        for peer in table.peers {
            guard let handle = table.handle(for: peer), let conn = links[handle]?.connection else { continue }
            if links[handle]?.window.resetIfAckTimedOut(now: now) == true { host?.pump(conn) }
        }
    }

    // MARK: The performer of `SessionTable.Action`

    /// Performs the table's actions, every one of them, for every event, in order.
    /// `activate`: what the caller does when a connection becomes a peer's session.
    private func perform(
        _ actions: [SessionTable<ObjectIdentifier>.Action], activate: (ObjectIdentifier) -> Void = { _ in }
    ) {
        for action in actions {
            switch action {
            case .activate(let h):
                activate(h)
            case .closeDuplicate(let h):
                links[h]?.connection.close(reason: .duplicate, text: "another session was kept")
            case .refuseFull(let h), .refuseSourceFull(let h):
                links[h]?.connection.close(reason: .normal, text: "too many sessions")
            case let .evict(h, stranger):
                log.info(
                    "session of a stranger closed to make room for a known peer", ["peer": stranger.fingerprintText])
                links[h]?.connection.close(reason: .normal, text: "making room")
            case .peerOnline(let p):
                emit(.peerOnline(identity: p))
            case .peerOffline(let p):
                statusLines.forget(p)
                emit(.peerOffline(identity: p))
            case .scheduleOfflineCheck(let p, let due):
                offlineTimers[p]?.cancel()
                offlineTimers[p] = loop.scheduleTask(deadline: due.deadline) { [weak self] in
                    guard let self else { return }
                    self.offlineTimers[p] = nil
                    self.perform(self.table.offlineCheckDue(peer: p, now: self.clock.monotonicNow()))
                }
            }
        }
    }
}

/// Each online peer's latest status line, and the throttle on showing its changes.
struct StatusLines {
    var latest: [IdentityPublicKey: PresenceStatus] = [:]
    /// At most one shown status change per peer per second (a flood costs no more).
    var throttle = StatusThrottle<IdentityPublicKey>()

    mutating func forget(_ peer: IdentityPublicKey) {
        latest[peer] = nil
        throttle.forget(peer)
    }
}
