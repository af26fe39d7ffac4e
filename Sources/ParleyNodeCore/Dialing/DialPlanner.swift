import ParleyCore

/// The peers this node keeps dialling until a session is up: configured addresses, mDNS
/// advertisements and peers remembered from earlier sessions (several candidate addresses,
/// tried in turn), with backoff after failures, and the spoof flag for an advertisement whose claimed fingerprint its
/// handshake did not prove (not dialled again until the advertisement changes).
///
/// Pure: events in, actions out. The driver opens connections and keeps one timer per
/// target; what sessions are up is asked through `SessionView`.
public struct DialPlanner: Sendable {
    public enum Source: Sendable, Equatable {
        case configured, discovered
        /// A known peer, at the addresses it was reached at or announced (`remember`): how
        /// two nodes find each other again after a restart without mDNS.
        case remembered
    }

    /// Addresses kept per remembered peer, newest first: a laptop's few networks, not a
    /// history; bounds what a peer's announcements can make us dial.
    public static let maxRememberedAddresses = 4

    public struct Target: Sendable, Equatable {
        public var candidates: [DialAddress]
        /// The candidate tried next (advances after each failure).
        public var next = 0
        public let source: Source
        /// The identity the target's last session proved.
        public var identity: IdentityPublicKey?
        /// For advertisements: the compact fingerprint they claim.
        public var fingerprintHint: String?
        /// The claimed fingerprint was not what the handshake proved.
        public var spoofed = false
        public var connecting = false
        public var failures = 0
        /// A redial timer is armed for this target.
        public var redialArmed = false
        /// For advertisements: it claims (or proved) a peer we know. Known targets are
        /// kept first when the table of discovered targets is full.
        public var known = false
        /// For advertisements: its presence token was first seen under another instance at
        /// other hosts (`PresenceSightings`): a copy, never treated as a known peer.
        public var suspicious = false
        /// Candidates learned from gossip (a contact's signed record relayed by another):
        /// dialled at the rate of unknown advertisements until one of them reaches the
        /// peer, since the signer may list any address.
        public var rateLimitedCandidates: Set<DialAddress> = []
        /// When this target was added (the oldest unknown one makes room first).
        var serial: UInt64 = 0

        init(candidates: [DialAddress], source: Source) {
            self.candidates = candidates
            self.source = source
        }
    }

    public enum Action: Sendable, Equatable {
        /// Open a TCP connection to `address` for `target`; report the outcome with
        /// `connectFailed` or `connectionClosed` / `sessionUp`.
        case connect(DialTargetKey, DialAddress, expectedFingerprint: String?)
        /// Arm (or re-arm) the target's timer; when it fires, call `redialDue`.
        case armRedial(DialTargetKey, after: Duration)
        case cancelRedial(DialTargetKey)
    }

    /// What the planner needs to know about the sessions that are up.
    public struct SessionView {
        public var isConnected: (IdentityPublicKey) -> Bool
        /// The identity online with this compact fingerprint, and the host its session
        /// comes from.
        public var online: (_ fingerprintCompact: String) -> (identity: IdentityPublicKey, host: String)?

        public init(
            isConnected: @escaping (IdentityPublicKey) -> Bool,
            online: @escaping (String) -> (identity: IdentityPublicKey, host: String)?
        ) {
            self.isConnected = isConnected
            self.online = online
        }
    }

    public let backoff: RedialBackoff
    public private(set) var targets: [DialTargetKey: Target] = [:]
    public private(set) var stopping = false
    /// Discovered targets kept at once (`NodeLimits.maxDiscoveredTargets`).
    public let maxDiscovered: Int
    /// Dials of advertised addresses, per host: anyone on the LAN can advertise any
    /// address, so without this every node would dial a victim for as long as a fake
    /// advertisement lasts.
    public private(set) var dialRate: DialRateLimit
    /// Where each advertised presence token was first seen (replays are suspicious).
    public private(set) var sightings = PresenceSightings()
    private var nextSerial: UInt64 = 0

    public init(
        backoff: RedialBackoff, maxDiscovered: Int = NodeLimits.maxDiscoveredTargets,
        dialRate: DialRateLimit = DialRateLimit()
    ) {
        self.backoff = backoff
        self.maxDiscovered = maxDiscovered
        self.dialRate = dialRate
    }

    /// Discovered targets now.
    public var discoveredCount: Int { targets.values.filter { $0.source == .discovered }.count }

    // MARK: Targets

    /// A configured peer (`--peer`, `parley connect`): dialled now.
    public mutating func addConfigured(_ address: DialAddress, sessions: SessionView) -> [Action] {
        let key = DialTargetKey(address: address)
        if targets[key] == nil { targets[key] = Target(candidates: [address], source: .configured) }
        return dial(key, sessions: sessions)
    }

    /// Replaces the configured set (configuration reload): drops what is gone, dials the rest.
    public mutating func setConfigured(_ addresses: [DialAddress], sessions: SessionView) -> [Action] {
        let wanted = Set(addresses.map(DialTargetKey.init(address:)))
        var actions: [Action] = []
        for (key, t) in targets where t.source == .configured && !wanted.contains(key) {
            targets[key] = nil
            actions.append(.cancelRedial(key))
        }
        for a in addresses { actions += addConfigured(a, sessions: sessions) }
        return actions
    }

    /// An advertisement appeared or changed. A change of addresses or claimed fingerprint
    /// clears the spoof flag: it may be a different node now.
    /// `known`: the advertisement names a peer we know (the driver recognised it). When
    /// `maxDiscovered` targets exist, a known one replaces the oldest unknown one; an
    /// unknown one is ignored.
    /// `presenceToken`: the advertisement's private-presence token, if it has one: a token
    /// first seen under another instance at other hosts marks this one `suspicious` (a
    /// replay), and a suspicious advertisement is never known.
    public mutating func addDiscovered(
        _ key: DialTargetKey, candidates: [DialAddress], fingerprintHint: String?,
        known: Bool = false, presenceToken: [UInt8]? = nil, sessions: SessionView, now: MonotonicInstant? = nil
    ) -> [Action] {
        var actions: [Action] = []
        var known = known
        var suspicious = false
        if let token = presenceToken,
            sightings.observe(token: token, instance: key.rawValue, hosts: Set(candidates.map(\.host)))
        {
            suspicious = true
            known = false
        }
        if var t = targets[key] {
            if t.candidates != candidates || t.fingerprintHint != fingerprintHint { t.spoofed = false }
            t.candidates = candidates
            t.next = 0
            t.fingerprintHint = fingerprintHint
            t.suspicious = suspicious
            t.known = !suspicious && (t.known || known)
            targets[key] = t
        } else {
            if discoveredCount >= maxDiscovered {
                guard known,
                    let victim = targets.filter({ $0.value.source == .discovered && !$0.value.known })
                        .min(by: { $0.value.serial < $1.value.serial })?.key
                else { return [] }
                targets[victim] = nil
                actions.append(.cancelRedial(victim))
            }
            var t = Target(candidates: candidates, source: .discovered)
            t.fingerprintHint = fingerprintHint
            t.known = known
            t.suspicious = suspicious
            nextSerial += 1
            t.serial = nextSerial
            targets[key] = t
        }
        return actions + dial(key, sessions: sessions, now: now)
    }

    /// A known peer can be reached at `addresses` (newest first): from the store at start,
    /// from the address a session with it was dialled at, or from the ports it announced
    /// (`listenPorts`) on the host its session came from. Its target is created or its
    /// candidates updated (the new ones first, at most `maxRememberedAddresses`) and
    /// dialled unless a session with it is up.
    /// `gossiped`: the addresses come from a signed address record (`AddressGossip`);
    /// they are dialled under `dialRate` (pass `now`).
    public mutating func remember(
        _ identity: IdentityPublicKey, addresses: [DialAddress],
        sessions: SessionView, gossiped: Bool = false, now: MonotonicInstant? = nil
    ) -> [Action] {
        let key = DialTargetKey(rememberedPeer: identity)
        // An address a configured or discovered target of the same peer already dials is
        // not dialled twice.
        let elsewhere = Set(
            targets.filter { $0.key != key && $0.value.identity == identity }.flatMap(\.value.candidates))
        let fresh = addresses.filter { !elsewhere.contains($0) }
        guard !fresh.isEmpty else { return [] }
        var t = targets[key] ?? Target(candidates: [], source: .remembered)
        var merged: [DialAddress] = []
        for a in fresh + t.candidates where !merged.contains(a) { merged.append(a) }
        t.candidates = Array(merged.prefix(Self.maxRememberedAddresses))
        if gossiped {
            t.rateLimitedCandidates.formUnion(fresh)
        } else {
            t.rateLimitedCandidates.subtract(fresh)
        }
        t.rateLimitedCandidates.formIntersection(t.candidates)
        t.next = 0
        t.identity = identity
        targets[key] = t
        return dial(key, sessions: sessions, now: now)
    }

    public mutating func remove(_ key: DialTargetKey) -> [Action] {
        sightings.forget(instance: key.rawValue)
        guard targets.removeValue(forKey: key) != nil else { return [] }
        return [.cancelRedial(key)]
    }

    /// Stops dialling: every timer is cancelled, nothing is dialled again.
    public mutating func stop() -> [Action] {
        stopping = true
        let keys = targets.keys.sorted { $0.rawValue < $1.rawValue }
        targets.removeAll()
        return keys.map(Action.cancelRedial)
    }

    /// Targets whose last session was with `identity` (their keys, for `peers.list`).
    public func targets(of identity: IdentityPublicKey) -> [DialTargetKey] {
        targets.filter { $0.value.identity == identity }.map(\.key).sorted { $0.rawValue < $1.rawValue }
    }

    // MARK: Dialling

    /// Dials `key` unless it needs no dialling now. `now`: for the per-host rate of dials
    /// to advertised addresses (nil: not limited, for callers without a clock).
    public mutating func dial(_ key: DialTargetKey, sessions: SessionView, now: MonotonicInstant? = nil) -> [Action] {
        guard !stopping, var t = targets[key], !t.connecting else { return [] }
        var actions: [Action] = []
        if t.redialArmed {
            t.redialArmed = false
            actions.append(.cancelRedial(key))
        }
        defer { targets[key] = t }
        if let id = t.identity, sessions.isConnected(id) { return actions }  // maybe they dialled us
        if t.spoofed { return actions }
        if let hint = t.fingerprintHint, let (id, _) = sessions.online(hint) {
            // A session with the peer this advertisement names is up: nothing to dial,
            // whatever address it gives (issue 29, M3: anyone can re-advertise a contact's
            // presence token or fingerprint at a victim's address, and every node would dial
            // it). Dialled again if that session ends.
            t.identity = id
            return actions
        }
        guard !t.candidates.isEmpty else { return actions }
        let address = t.candidates[t.next % t.candidates.count]
        if (t.source == .discovered && !isProvenHost(address.host, ofFingerprint: t.fingerprintHint))
            || t.rateLimitedCandidates.contains(address), let now
        {
            // An advertised address, whoever it claims to be (a known peer's advertisement
            // can be replayed at any address): a few dials, then one per interval, per host,
            // from this node whatever the advertisements say. Not limited: a host where a
            // session proved the very peer the advertisement names (a replay there only
            // makes us dial that peer), so a contact that restarts is found at once.
            if let wait = dialRate.take(host: address.host, now: now) {
                t.redialArmed = true
                actions.append(.armRedial(key, after: wait))
                return actions
            }
        }
        t.connecting = true
        actions.append(.connect(key, address, expectedFingerprint: t.fingerprintHint))
        return actions
    }

    /// Whether a session with the peer of compact fingerprint `hint` came from `host` (a
    /// remembered target's candidate that is not a mere gossiped claim).
    func isProvenHost(_ host: String, ofFingerprint hint: String?) -> Bool {
        guard let hint else { return false }
        return targets.values.contains { t in
            guard t.source == .remembered, let id = t.identity,
                t.candidates.contains(where: { $0.host == host && !t.rateLimitedCandidates.contains($0) })
            else { return false }
            return Fingerprint(id).compact == hint
        }
    }

    /// The target's timer fired.
    public mutating func redialDue(_ key: DialTargetKey, sessions: SessionView, now: MonotonicInstant? = nil)
        -> [Action]
    {
        targets[key]?.redialArmed = false
        return dial(key, sessions: sessions, now: now)
    }

    /// The TCP connection or its handshake failed (or it closed before a session was kept).
    public mutating func attemptFailed(_ key: DialTargetKey, random: some RandomSource) -> [Action] {
        guard var t = targets[key], t.connecting else { return [] }
        t.connecting = false
        t.failures += 1
        t.next += 1  // try the next advertised address
        targets[key] = t
        return armRedial(key, random: random)
    }

    /// A session on a connection dialled for `key` was kept.
    public mutating func sessionUp(_ key: DialTargetKey, identity: IdentityPublicKey) {
        guard var t = targets[key] else { return }
        // A remembered peer's target stays that peer's: another node now at one of its
        // old addresses is a session of its own, not a new meaning for the target.
        if t.source != .remembered { t.identity = identity }
        // The address reached the peer: no longer a mere claim.
        if !t.candidates.isEmpty { t.rateLimitedCandidates.remove(t.candidates[t.next % t.candidates.count]) }
        t.known = true  // a session was kept: kept first when the table is full
        t.suspicious = false
        t.connecting = false
        t.failures = 0
        targets[key] = t
    }

    /// The handshake proved an identity (before the trust decision): remember it, so a
    /// refused session is not dialled again while a session with it is up elsewhere.
    /// For a remembered peer's target, another identity at that address (the address was
    /// reused) counts as a failed attempt for it: its next address is tried after backoff.
    @discardableResult
    public mutating func provedIdentity(
        _ key: DialTargetKey, identity: IdentityPublicKey,
        random: some RandomSource
    ) -> [Action] {
        guard var t = targets[key] else { return [] }
        guard t.source == .remembered else {
            targets[key]?.identity = identity
            return []
        }
        guard t.identity != identity, t.connecting else { return [] }
        t.connecting = false
        t.failures += 1
        t.next += 1
        targets[key] = t
        return armRedial(key, random: random)
    }

    /// The handshake proved another identity than the advertisement claimed: do not
    /// knock again until the advertisement changes.
    public mutating func spoofDetected(_ key: DialTargetKey) { targets[key]?.spoofed = true }

    /// The peer refused us by its trust policy (`close(keyChangePending)` or
    /// `close(notTrusted)`): back off harder instead of knocking every half second.
    public mutating func refusedByPeerTrust(_ key: DialTargetKey, random: some RandomSource) -> [Action] {
        guard targets[key] != nil else { return [] }
        targets[key]!.failures += 2
        return armRedial(key, random: random)
    }

    /// The session with `identity` ended: dial again every target that reached it.
    public mutating func sessionDown(_ identity: IdentityPublicKey, random: some RandomSource) -> [Action] {
        targets.filter { $0.value.identity == identity }.map(\.key).sorted { $0.rawValue < $1.rawValue }
            .flatMap { armRedial($0, random: random) }
    }

    /// A person accepted `new` as the replacement of `old`: targets that reached `old`
    /// now mean `new`, and are dialled at once rather than after their backoff.
    public mutating func redirect(
        from old: IdentityPublicKey, to new: IdentityPublicKey,
        sessions: SessionView
    ) -> [Action] {
        let keys = targets.filter { $0.value.identity == old || $0.value.identity == new }.map(\.key)
            .sorted { $0.rawValue < $1.rawValue }
        var actions: [Action] = []
        for k in keys {
            targets[k]?.identity = new
            actions += dial(k, sessions: sessions)
        }
        return actions
    }

    private mutating func armRedial(_ key: DialTargetKey, random: some RandomSource) -> [Action] {
        guard !stopping, var t = targets[key], !t.redialArmed, !t.connecting else { return [] }
        t.redialArmed = true
        targets[key] = t
        return [.armRedial(key, after: backoff.delay(afterFailures: t.failures, random: random))]
    }
}
