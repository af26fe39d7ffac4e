import NIOCore
import ParleyCore
import ParleyNodeCore

/// Dialling: the dial targets (`DialPlanner`: configured addresses, mDNS advertisements,
/// remembered and gossiped addresses), their redial timers, and who waits for the outcome
/// of a dial (`parley connect --wait`). The one performer of `DialPlanner.Action`.
///
/// It opens no socket itself: `open` (the node's, which builds the NIO bootstrap and the
/// connection handler) does, and the node reports back what became of the connection.
/// Its state is its own and lives on the node's event loop (the loop is its lock); time
/// and randomness are injected, so tests run the redial timers on a mock clock.
final class DialDriver {
    let loop: EventLoop
    let clock: any NodeClock
    let random: any RandomSource

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

    init(planner: DialPlanner, loop: EventLoop, clock: any NodeClock, random: any RandomSource) {
        self.planner = planner
        self.loop = loop
        self.clock = clock
        self.random = random
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
        perform(planner.attemptFailed(key, random: random))
        if refusedByTrust {
            // Refused by the peer's trust policy: back off instead of knocking every half second.
            perform(planner.refusedByPeerTrust(key, random: random))
        }
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
}
