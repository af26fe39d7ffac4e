import NIOCore
import NIOPosix
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Dialling: the dial targets (`DialPlanner`: configured addresses, mDNS advertisements,
/// remembered and gossiped addresses, kept in the store's address book), their redial
/// timers, and who waits for the outcome of a dial (`parley connect --wait`). The one
/// performer of `DialPlanner.Action`.
///
/// It opens no socket itself: `open` (the node's, which builds the NIO bootstrap and the
/// connection handler) does, and the node reports back what became of the connection.
/// Its state is its own and lives on the node's event loop (the loop is its lock); time
/// and randomness are injected, so tests run the redial timers on a mock clock.
final class DialDriver {
    let loop: EventLoop
    let clock: any NodeClock
    let random: any RandomSource
    let log: Logger
    /// Security events (replayed presence tokens, a full table of advertisements): logged
    /// once per kind per minute.
    let attackLog: RateLimitedLog
    /// Only the address-book concern of the store (`AddressBookStore`): where peers were
    /// reached or said they listen, for redialling after a restart.
    let store: any AddressBookStore

    /// The decisions (ParleyNodeCore). Changed through this driver's `perform` of what its
    /// methods return.
    var planner: DialPlanner
    /// Opens a connection for a target: the address, and the fingerprint an advertisement
    /// claimed (the handshake must prove it).
    var open: (DialTargetKey, DialAddress, _ expectedFingerprint: String?) -> Void = { _, _, _ in }
    /// What the planner may ask about the sessions that are up.
    var sessions: () -> DialPlanner.SessionView = {
        DialPlanner.SessionView(isConnected: { _ in false }, online: { _ in nil })
    }

    private var redialTimers: [DialTargetKey: Scheduled<Void>] = [:]
    /// `peers.connect` with `wait`: who waits for the next outcome of a target.
    private var watchers: [DialTargetKey: [(token: Int, report: (DialOutcome) -> Void)]] = [:]
    private var nextWatchToken = 0

    init(
        planner: DialPlanner, loop: EventLoop, clock: any NodeClock, random: any RandomSource,
        store: any AddressBookStore, log: Logger, attackLog: RateLimitedLog
    ) {
        self.planner = planner
        self.loop = loop
        self.clock = clock
        self.random = random
        self.store = store
        self.log = log
        self.attackLog = attackLog
    }

    /// Redial timers armed now (tests, status).
    var armedRedials: Int { redialTimers.count }

    // MARK: The performer

    func perform(_ actions: [DialPlanner.Action]) {
        for action in actions {
            switch action {
            case .connect(let key, let address, let expected):
                open(key, address, expected)
            case .armRedial(let key, let delay):
                redialTimers[key]?.cancel()
                redialTimers[key] = loop.scheduleTask(in: delay.timeAmount) { [weak self] in
                    guard let self else { return }
                    self.redialTimers[key] = nil
                    self.perform(
                        self.planner.redialDue(key, sessions: self.sessions(), now: self.clock.monotonicNow()))
                }
            case .cancelRedial(let key):
                redialTimers.removeValue(forKey: key)?.cancel()
            }
        }
    }

    /// A connection opened for `key` ended without a session (TCP, handshake or trust).
    /// `refusedByTrust`: the peer closed with `keyChangePending` or `notTrusted`.
    func attemptFailed(_ key: DialTargetKey, _ outcome: String, refusedByTrust: Bool = false) {
        finishWatch(key, .failed(outcome))
        perform(planner.attemptFailed(key, random: self.random))
        if refusedByTrust {
            // Refused by the peer's trust policy: back off instead of knocking every half second.
            perform(planner.refusedByPeerTrust(key, random: self.random))
        }
    }

    /// A TCP connect for `key` failed (refused, unreachable, timed out).
    func connectFailed(_ key: DialTargetKey, _ error: Error) {
        log.debug("dial failed", ["address": key.rawValue, "error": "\(error)"])
        perform(planner.attemptFailed(key, random: self.random))
        finishWatch(key, .failed("cannot connect to \(key.rawValue): \(Self.describe(error))"))
    }

    // MARK: What became of a dialled connection (`SessionDriver`)

    /// The handshake on a connection dialled for `key` proved a key other than the one its
    /// advertisement claimed.
    func spoofDetected(_ key: DialTargetKey) { planner.spoofDetected(key) }

    /// The handshake on a connection dialled for `key` proved `identity`.
    func provedIdentity(_ key: DialTargetKey, identity: IdentityPublicKey) {
        perform(planner.provedIdentity(key, identity: identity, random: self.random))
    }

    /// The connection `conn` dialled for `key` now carries `identity`'s session.
    func sessionUp(_ key: DialTargetKey, identity: IdentityPublicKey, on conn: PeerConnection) {
        planner.sessionUp(key, identity: identity)
        // Told once the peer shows it kept the session, not at our end of the handshake:
        // its trust decision comes after (`confirmPeerKeepsSession`).
        if isWatched(key) {
            conn.confirmPeerKeepsSession(probe: UInt64(random.uniform(below: .max))) { [weak self] in
                self?.finishWatch(key, .connected(identity: identity))
            }
        }
        // The address we reached it at is one to try again after a restart.
        remember(identity, at: [conn.remoteAddress])
    }

    /// `identity`'s session ended: every target that reached it is dialled again.
    func sessionDown(_ identity: IdentityPublicKey) {
        perform(planner.sessionDown(identity, random: self.random))
    }

    // MARK: Remembered addresses (the address book)

    /// `peer` can be reached at these "host:port" addresses: kept in the store and told to
    /// the planner. `gossiped`: the peer's signed claim relayed by a contact (dialled under
    /// the rate limit of unknown advertisements until one reaches it). An address the
    /// store cannot keep is still dialled in this run (only a restart forgets it), and the
    /// failure is logged.
    func remember(_ peer: IdentityPublicKey, at addresses: [String]) {
        let parsed = addresses.compactMap { try? HostPort(parsing: $0) }.filter { $0.port != 0 }
        remember(peer, addresses: parsed.map(DialAddress.init))
    }

    func remember(_ peer: IdentityPublicKey, addresses: [DialAddress], gossiped: Bool = false) {
        guard !addresses.isEmpty else { return }
        let nowMs = clock.wallMilliseconds()
        for address in addresses {
            do { try store.rememberAddress(address.description, of: peer, at: nowMs) } catch {
                log.error(
                    "could not keep a peer's address for after a restart; it is dialled in this run",
                    ["peer": peer.fingerprintText, "address": address.description, "error": "\(error)"])
            }
        }
        perform(
            planner.remember(
                peer, addresses: addresses, sessions: sessions(), gossiped: gossiped,
                now: gossiped ? clock.monotonicNow() : nil))
    }

    /// At start: every remembered peer is dialled (unless it dials us first). A store
    /// that cannot list them is logged: nothing is redialled until mDNS, a configured
    /// peer or the peers themselves bring sessions back.
    func redialRemembered() {
        let remembered: [IdentityPublicKey: [String]]
        do { remembered = try store.rememberedAddresses() } catch {
            log.error(
                "remembered addresses not read; peers are not redialled at them until they are seen again",
                ["error": "\(error)"])
            return
        }
        for (identity, addresses) in remembered.sorted(by: { $0.key < $1.key }) {
            let parsed = addresses.compactMap { try? HostPort(parsing: $0) }.map(DialAddress.init)
            perform(planner.remember(identity, addresses: parsed, sessions: sessions()))
        }
    }

    /// The addresses `peers.list` shows for `peer` after its session's: its dial targets'
    /// (a remembered peer's target is named by its identity: its addresses are shown).
    func shownAddresses(of peer: IdentityPublicKey) -> [String] {
        var out: [String] = []
        for t in planner.targets(of: peer) {
            let shown =
                planner.targets[t]?.source == .remembered
                ? (planner.targets[t]?.candidates.map(\.description) ?? []) : [t.rawValue]
            for a in shown where !out.contains(a) { out.append(a) }
        }
        return out
    }

    // MARK: Watching a dial (`peers.connect` with `wait`)

    /// Calls `report` once, with the outcome of the next attempt on `key` (at once if a
    /// session through it is already up). Returns a token to cancel the watch.
    func watch(_ key: DialTargetKey, _ report: @escaping (DialOutcome) -> Void) -> Int {
        nextWatchToken += 1
        let token = nextWatchToken
        if let id = planner.targets[key]?.identity, sessions().isConnected(id) {
            report(.connected(identity: id))
            return token
        }
        watchers[key, default: []].append((token, report))
        return token
    }

    /// Whether anyone waits for the outcome of a dial of `key`.
    func isWatched(_ key: DialTargetKey) -> Bool { watchers[key] != nil }

    func cancelWatch(_ key: DialTargetKey, token: Int) {
        watchers[key]?.removeAll { $0.token == token }
        if watchers[key]?.isEmpty == true { watchers[key] = nil }
    }

    /// The dial of `key` ended: tell every watcher.
    func finishWatch(_ key: DialTargetKey, _ outcome: DialOutcome) {
        guard let waiting = watchers.removeValue(forKey: key) else { return }
        for w in waiting { w.report(outcome) }
    }

    /// A target a failed `connect --wait` added stops being dialled: the user was told it
    /// failed and decides whether to try again (a configured `--peer` that reached a peer
    /// stays).
    func forgetFailedTarget(_ key: DialTargetKey) {
        guard planner.targets[key]?.source == .configured, planner.targets[key]?.identity == nil else { return }
        perform(planner.remove(key))
    }
}
