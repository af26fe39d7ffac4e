import ParleyCore

/// The node's live sessions: at most one per peer identity (the tie-break in
/// `SessionTieBreak`), a cap on their number, and presence as the control side sees it,
/// with the offline notice debounced when the peer closed one of two duplicate sessions.
///
/// Pure: it takes events (a session authenticated, a connection closed, a debounce timer
/// fired) and returns the actions the driver performs. `Handle` is the driver's name for a
/// connection (an `ObjectIdentifier` in the daemon, an integer in tests).
public struct SessionTable<Handle: Hashable & Sendable>: Sendable {
    public enum Action: Sendable, Equatable {
        /// Keep this connection as the peer's session (it may now carry records).
        case activate(Handle)
        /// Close with `close(duplicate)`: another session with the same peer was kept.
        case closeDuplicate(Handle)
        /// Close politely: the table is full.
        case refuseFull(Handle)
        /// Close politely: the connection's address or IPv6 /64 holds as many sessions as
        /// one source may (`maxPerAddress`, `maxPerNetwork`).
        case refuseSourceFull(Handle)
        /// Close politely to make room for a known peer: this session was a stranger's
        /// (unverified, never exchanged a message). It is already out of the table.
        case evict(Handle, IdentityPublicKey)
        case peerOnline(IdentityPublicKey)
        case peerOffline(IdentityPublicKey)
        /// Call `offlineCheckDue(peer:)` at this instant (the debounce).
        case scheduleOfflineCheck(IdentityPublicKey, at: MonotonicInstant)
    }

    public struct Session: Sendable, Equatable {
        public let handle: Handle
        public let side: SessionTieBreak.Side
        /// Where the connection came from (nil: not counted per source, e.g. a dial we made
        /// to a configured peer).
        public var source: SourceAddress? = nil
        public var standing: Standing = .known
        /// Order of establishment: the oldest stranger is evicted first.
        public var serial: UInt64 = 0
    }

    /// What a peer is to this node when the table is full. A stranger is a key that is not
    /// verified and has never exchanged a message with us: minting such keys costs an
    /// attacker nothing, so their sessions make room for everyone else.
    public enum Standing: Sendable, Equatable {
        case stranger
        /// Verified, or a message was exchanged (either way) at some point.
        case known
    }

    public let me: IdentityPublicKey
    /// Established sessions in total (a LAN office is tens to hundreds of nodes).
    public let maxSessions: Int
    /// How long an offline notice waits after the peer closed a duplicate session: the
    /// peer kept another connection with us, which is still finishing its handshake, so
    /// presence would otherwise flap offline/online.
    public let offlineDebounce: Duration

    /// Sessions from one address, and from one IPv6 /64 (`NodeLimits`).
    public let maxPerAddress: Int
    public let maxPerNetwork: Int

    /// Internal only so the lookups below can be inlined into the daemon, specialized for
    /// its handle type: called generically across the module boundary, one `isOnline` (in
    /// every `messages.send` answer) cost ~3,900 instructions in callgrind (docs/BENCHMARKS.md
    /// "issue 32 part 8"). Written only by this file.
    @usableFromInline var sessions: [IdentityPublicKey: Session] = [:]
    private var offlinePending: [IdentityPublicKey: MonotonicInstant] = [:]
    private var perAddress: [String: Int] = [:]
    private var perNetwork: [String: Int] = [:]
    private var nextSerial: UInt64 = 0

    public init(
        me: IdentityPublicKey, maxSessions: Int = 1_024, maxPerAddress: Int = NodeLimits.maxSessionsPerAddress,
        maxPerNetwork: Int = NodeLimits.maxSessionsPerNetwork, offlineDebounce: Duration = .seconds(2)
    ) {
        self.me = me
        self.maxSessions = maxSessions
        self.maxPerAddress = maxPerAddress
        self.maxPerNetwork = maxPerNetwork
        self.offlineDebounce = offlineDebounce
    }

    /// Sessions counted from `address` (tests, status).
    public func sessionCount(fromAddress address: String) -> Int { perAddress[address, default: 0] }

    /// A message was exchanged with `peer` (or the user verified it): it is no longer a
    /// stranger, so its session is not evicted to make room.
    public mutating func promote(_ peer: IdentityPublicKey) {
        sessions[peer]?.standing = .known
    }

    public var count: Int { sessions.count }
    public var peers: Dictionary<IdentityPublicKey, Session>.Keys { sessions.keys }
    @inlinable public func session(for peer: IdentityPublicKey) -> Session? { sessions[peer] }
    @inlinable public func handle(for peer: IdentityPublicKey) -> Handle? { sessions[peer]?.handle }
    @inlinable public func isOnline(_ peer: IdentityPublicKey) -> Bool { sessions[peer] != nil }
    @inlinable public func isActive(_ handle: Handle, for peer: IdentityPublicKey) -> Bool {
        sessions[peer]?.handle == handle
    }

    /// Whether a session with `peer` could be kept now: the cap counts peers, so a
    /// second session with a peer already online never counts twice.
    public func hasRoom(for peer: IdentityPublicKey) -> Bool {
        sessions.count < maxSessions || sessions[peer] != nil
    }

    /// Whether `established` would keep a session with `peer` from `source` now (asked
    /// before the trust decision, so a refused stranger's key is not even pinned).
    public func wouldAdmit(_ peer: IdentityPublicKey, source: SourceAddress?, standing: Standing) -> Bool {
        if sessions[peer] != nil { return true }
        func roomIn(_ used: Int, _ cap: Int, _ scope: (Session) -> Bool) -> Bool {
            used < cap || (standing == .known && oldestStranger(where: scope) != nil)
        }
        guard roomIn(sessions.count, maxSessions, { _ in true }) else { return false }
        guard let source else { return true }
        return roomIn(perNetwork[source.network, default: 0], maxPerNetwork, { $0.source?.network == source.network })
            && roomIn(perAddress[source.address, default: 0], maxPerAddress, { $0.source?.address == source.address })
    }

    /// A connection finished its handshake and passed the trust decision. `source`: where
    /// it came from (nil: not counted per source); `standing`: what the peer is to us.
    ///
    /// A new peer over a cap (all sessions, its address's, its /64's) is refused, unless it
    /// is known and a stranger's session in the same scope can make room: the oldest such
    /// is evicted. So known peers keep their sessions, and get one, however many fresh
    /// identities fill the table.
    public mutating func established(
        _ handle: Handle, peer: IdentityPublicKey, side: SessionTieBreak.Side,
        source: SourceAddress? = nil, standing: Standing = .known
    ) -> [Action] {
        var actions: [Action] = []
        if let existing = sessions[peer], existing.handle != handle {
            guard SessionTieBreak.keepNew(side, over: existing.side, me: me, peer: peer) else {
                return [.closeDuplicate(handle)]
            }
            actions.append(.closeDuplicate(existing.handle))
            remove(peer)
            // The peer keeps its standing (a promotion is not lost to a reconnect).
            return actions
                + admit(
                    handle, peer: peer, side: side, source: source,
                    standing: existing.standing == .known ? .known : standing, wasOnline: true)
        }
        if sessions[peer] == nil {
            // The caps, widest first; each either finds room or refuses.
            if sessions.count >= maxSessions {
                guard standing == .known, let victim = oldestStranger(where: { _ in true }) else {
                    return [.refuseFull(handle)]
                }
                actions += evict(victim)
            }
            if let source {
                if perNetwork[source.network, default: 0] >= maxPerNetwork {
                    guard standing == .known,
                        let victim = oldestStranger(where: { $0.source?.network == source.network })
                    else {
                        return [.refuseSourceFull(handle)]
                    }
                    actions += evict(victim)
                }
                if perAddress[source.address, default: 0] >= maxPerAddress {
                    guard standing == .known,
                        let victim = oldestStranger(where: { $0.source?.address == source.address })
                    else {
                        return [.refuseSourceFull(handle)]
                    }
                    actions += evict(victim)
                }
            }
        }
        let wasOnline = sessions[peer] != nil || offlinePending.removeValue(forKey: peer) != nil
        if sessions[peer] != nil { remove(peer) }
        return actions + admit(handle, peer: peer, side: side, source: source, standing: standing, wasOnline: wasOnline)
    }

    private mutating func admit(
        _ handle: Handle, peer: IdentityPublicKey, side: SessionTieBreak.Side,
        source: SourceAddress?, standing: Standing, wasOnline: Bool
    ) -> [Action] {
        nextSerial += 1
        sessions[peer] = Session(handle: handle, side: side, source: source, standing: standing, serial: nextSerial)
        if let source {
            perAddress[source.address, default: 0] += 1
            perNetwork[source.network, default: 0] += 1
        }
        return wasOnline ? [.activate(handle)] : [.activate(handle), .peerOnline(peer)]
    }

    private mutating func remove(_ peer: IdentityPublicKey) {
        guard let s = sessions.removeValue(forKey: peer) else { return }
        if let source = s.source {
            Self.decrement(&perAddress, source.address)
            Self.decrement(&perNetwork, source.network)
        }
    }

    private static func decrement(_ counts: inout [String: Int], _ key: String) {
        guard let n = counts[key] else { return }
        counts[key] = n <= 1 ? nil : n - 1
    }

    private func oldestStranger(where matches: (Session) -> Bool) -> IdentityPublicKey? {
        sessions.filter { $0.value.standing == .stranger && matches($0.value) }
            .min { $0.value.serial < $1.value.serial }?.key
    }

    private mutating func evict(_ peer: IdentityPublicKey) -> [Action] {
        guard let s = sessions[peer] else { return [] }
        remove(peer)
        return [.evict(s.handle, peer), .peerOffline(peer)]
    }

    /// A connection closed. Only the active session of a peer changes presence.
    /// `peerKeptAnother`: the peer's close record said `duplicate`. `stopping`: this node
    /// is shutting down (no presence change is reported).
    public mutating func closed(
        _ handle: Handle, peer: IdentityPublicKey?, peerKeptAnother: Bool,
        stopping: Bool, now: MonotonicInstant
    ) -> [Action] {
        guard let peer, sessions[peer]?.handle == handle else { return [] }
        remove(peer)
        // This node is shutting down: the peer did not go offline, we did. Saying so would
        // make every client (`parley follow`) print each peer offline at a local restart.
        if stopping { return [] }
        if peerKeptAnother {
            let due = now + offlineDebounce
            offlinePending[peer] = due
            return [.scheduleOfflineCheck(peer, at: due)]
        }
        return [.peerOffline(peer)]
    }

    /// The debounce timer fired: the peer is offline unless a session came back meanwhile.
    public mutating func offlineCheckDue(peer: IdentityPublicKey, now: MonotonicInstant) -> [Action] {
        guard let due = offlinePending[peer], now >= due else { return [] }
        offlinePending[peer] = nil
        return sessions[peer] == nil ? [.peerOffline(peer)] : []
    }
}
