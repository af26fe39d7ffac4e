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
        case peerOnline(IdentityPublicKey)
        case peerOffline(IdentityPublicKey)
        /// Call `offlineCheckDue(peer:)` at this instant (the debounce).
        case scheduleOfflineCheck(IdentityPublicKey, at: MonotonicInstant)
    }

    public struct Session: Sendable, Equatable {
        public let handle: Handle
        public let side: SessionTieBreak.Side
    }

    public let me: IdentityPublicKey
    /// Established sessions in total (a LAN office is tens to hundreds of nodes).
    public let maxSessions: Int
    /// How long an offline notice waits after the peer closed a duplicate session: the
    /// peer kept another connection with us, which is still finishing its handshake, so
    /// presence would otherwise flap offline/online.
    public let offlineDebounce: Duration

    private var sessions: [IdentityPublicKey: Session] = [:]
    private var offlinePending: [IdentityPublicKey: MonotonicInstant] = [:]

    public init(me: IdentityPublicKey, maxSessions: Int = 1_024, offlineDebounce: Duration = .seconds(2)) {
        self.me = me
        self.maxSessions = maxSessions
        self.offlineDebounce = offlineDebounce
    }

    public var count: Int { sessions.count }
    public var peers: Dictionary<IdentityPublicKey, Session>.Keys { sessions.keys }
    public func session(for peer: IdentityPublicKey) -> Session? { sessions[peer] }
    public func handle(for peer: IdentityPublicKey) -> Handle? { sessions[peer]?.handle }
    public func isOnline(_ peer: IdentityPublicKey) -> Bool { sessions[peer] != nil }
    public func isActive(_ handle: Handle, for peer: IdentityPublicKey) -> Bool { sessions[peer]?.handle == handle }

    /// Whether a session with `peer` could be kept now: the cap counts peers, so a
    /// second session with a peer already online never counts twice.
    public func hasRoom(for peer: IdentityPublicKey) -> Bool {
        sessions.count < maxSessions || sessions[peer] != nil
    }

    /// A connection finished its handshake and passed the trust decision.
    public mutating func established(_ handle: Handle, peer: IdentityPublicKey, side: SessionTieBreak.Side) -> [Action] {
        guard hasRoom(for: peer) else { return [.refuseFull(handle)] }
        var actions: [Action] = []
        if let existing = sessions[peer], existing.handle != handle {
            guard SessionTieBreak.keepNew(side, over: existing.side, me: me, peer: peer) else {
                return [.closeDuplicate(handle)]
            }
            actions.append(.closeDuplicate(existing.handle))
        }
        let wasOnline = sessions[peer] != nil || offlinePending.removeValue(forKey: peer) != nil
        sessions[peer] = Session(handle: handle, side: side)
        actions.append(.activate(handle))
        if !wasOnline { actions.append(.peerOnline(peer)) }
        return actions
    }

    /// A connection closed. Only the active session of a peer changes presence.
    /// `peerKeptAnother`: the peer's close record said `duplicate`. `stopping`: this node
    /// is shutting down (no presence change is reported).
    public mutating func closed(_ handle: Handle, peer: IdentityPublicKey?, peerKeptAnother: Bool,
                                stopping: Bool, now: MonotonicInstant) -> [Action] {
        guard let peer, sessions[peer]?.handle == handle else { return [] }
        sessions[peer] = nil
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
