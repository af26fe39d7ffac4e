import ParleyCore

/// Room operations a node cannot place yet (a parent has not arrived, or the room is not
/// known until an operation names this node), per peer that sent them: in memory, oldest
/// first, at most `RoomAdmission.maxWaitingPerSender` per peer and each for at most
/// `RoomAdmission.waitingTimeoutSeconds` (docs/PROTOCOL.md, "What a node keeps"). Pure:
/// `now` is passed in; the room driver offers what `takeReady` returns again.
public struct WaitingRoomOperations: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// Held until its parents (or its invitation) arrive.
        case held
        /// The same operation was already waiting: nothing changed.
        case alreadyWaiting
        /// The peer already has `limit` operations waiting: dropped (the peer sends it again
        /// on its next session, if it is honest).
        case overLimit(limit: Int)
    }

    private var byPeer: [IdentityPublicKey: [(op: RoomOperation, since: MonotonicInstant)]] = [:]
    public let maxPerPeer: Int
    public let timeout: Duration

    public init(
        maxPerPeer: Int = RoomAdmission.maxWaitingPerSender,
        timeout: Duration = .seconds(RoomAdmission.waitingTimeoutSeconds)
    ) {
        self.maxPerPeer = maxPerPeer
        self.timeout = timeout
    }

    /// How many operations `peer` has waiting (expired ones included until its next hold).
    public func count(from peer: IdentityPublicKey) -> Int { byPeer[peer]?.count ?? 0 }

    /// Every waiting operation, over all peers.
    public var total: Int { byPeer.values.reduce(0) { $0 + $1.count } }

    /// Holds `op` from `peer`; every peer's timed-out operations go first (not only this
    /// peer's: a peer that never sends again, or a key made up for one session, would
    /// otherwise keep its share in memory for good, and a stream of such keys would grow
    /// it without bound).
    public mutating func hold(_ op: RoomOperation, from peer: IdentityPublicKey, now: MonotonicInstant) -> Outcome {
        expire(now: now)
        // Taken out while changed, so appending copies nothing.
        var list = byPeer.removeValue(forKey: peer) ?? []
        defer { byPeer[peer] = list.isEmpty ? nil : list }
        if list.contains(where: { $0.op.hash == op.hash }) { return .alreadyWaiting }
        guard list.count < maxPerPeer else { return .overLimit(limit: maxPerPeer) }
        list.append((op, now))
        return .held
    }

    /// The other operations of `room` that `peer` sent and that wait (an unknown room's log
    /// arrives from one peer, create first; the invitation may be its last operation).
    public func others(of room: RoomID, from peer: IdentityPublicKey, except hash: RoomOperationHash)
        -> [RoomOperation]
    {
        (byPeer[peer] ?? []).map(\.op).filter { $0.roomID == room && $0.hash != hash }
    }

    /// Forgets what `peer` sent of `room` (the room was refused).
    public mutating func forget(room: RoomID, from peer: IdentityPublicKey) {
        remove(from: peer) { $0.roomID == room }
    }

    /// Forgets the operations of `peer` that were taken (stored with the room).
    public mutating func forget(_ hashes: Set<RoomOperationHash>, from peer: IdentityPublicKey) {
        remove(from: peer) { hashes.contains($0.hash) }
    }

    /// Takes out the operations of `room` that may move now, per peer, each peer's in the
    /// resolver's order: in a known room (`held`: its operations) only those whose parents
    /// are all held (the others would wait again: offering each of a peer's 4,097 waiting
    /// ones after every accepted operation made a flood of junk parents quadratic); in an
    /// unknown room (`held` nil) all of them.
    public mutating func takeReady(room: RoomID, held: [RoomOperationHash: RoomOperation]?)
        -> [(peer: IdentityPublicKey, operations: [RoomOperation])]
    {
        func ready(_ op: RoomOperation) -> Bool {
            op.roomID == room && (held.map { h in op.parents.allSatisfy { h[$0] != nil } } ?? true)
        }
        var taken: [(peer: IdentityPublicKey, operations: [RoomOperation])] = []
        for (peer, list) in byPeer {
            let mine = list.map(\.op).filter(ready)
            guard !mine.isEmpty else { continue }
            remove(from: peer, where: ready)
            taken.append((peer, mine.sorted(by: RoomResolver.precedes)))
        }
        return taken
    }

    /// Drops what waited `timeout` or longer, from every peer.
    public mutating func expire(now: MonotonicInstant) {
        for (peer, list) in byPeer {
            // Oldest first (appended in arrival order): the timed-out ones are a prefix.
            let expired = list.prefix { now - $0.since >= timeout }.count
            guard expired > 0 else { continue }
            byPeer[peer] = expired == list.count ? nil : Array(list.dropFirst(expired))
        }
    }

    private mutating func remove(from peer: IdentityPublicKey, where drop: (RoomOperation) -> Bool) {
        guard let list = byPeer[peer] else { return }
        let kept = list.filter { !drop($0.op) }
        byPeer[peer] = kept.isEmpty ? nil : kept
    }
}
