/// How often a peer's status line reaches this node's user: a peer may send `status`
/// records as fast as it likes (each costs a stored event), so at most one change per
/// `minInterval` is shown; a change within the interval is held and shown when it ends
/// (the latest one wins), so the last status a peer sets is never lost.
public struct StatusThrottle<Peer: Hashable & Sendable>: Sendable {
    public enum Action: Equatable, Sendable {
        /// Show the status now.
        case show
        /// Hold it; call `due(_:now:)` at this instant.
        case holdUntil(MonotonicInstant)
        /// Held already (a timer is pending): the newer status replaces the held one.
        case held
    }

    /// One shown change per second per peer: faster than a person changes a status line,
    /// slow enough that a flood costs a stored event per second, not per record.
    public var minInterval: Duration
    private var lastShown: [Peer: MonotonicInstant] = [:]
    private var holding: Set<Peer> = []

    public init(minInterval: Duration = .seconds(1)) { self.minInterval = minInterval }

    public mutating func received(from peer: Peer, now: MonotonicInstant) -> Action {
        if holding.contains(peer) { return .held }
        if let last = lastShown[peer], now - last < minInterval {
            holding.insert(peer)
            return .holdUntil(last + minInterval)
        }
        lastShown[peer] = now
        return .show
    }

    /// The hold for `peer` ended: show what is held now.
    public mutating func due(_ peer: Peer, now: MonotonicInstant) {
        holding.remove(peer)
        lastShown[peer] = now
    }

    /// The peer went offline: nothing to remember.
    public mutating func forget(_ peer: Peer) {
        lastShown[peer] = nil
        holding.remove(peer)
    }
}
