import ParleyCore

/// Room operations a node cannot place yet (a parent has not arrived, or the room is not
/// known until an operation names this node), per peer that sent them: in memory, oldest
/// first, at most `RoomAdmission.maxWaitingPerSender` per peer, at most
/// `RoomAdmission.maxWaitingInAll` over all peers, and each for at most
/// `RoomAdmission.waitingTimeoutSeconds` (docs/PROTOCOL.md, "What a node keeps"). Pure:
/// `now` is passed in; the room driver offers what `takeReady` returns again.
///
/// The total is bounded because the share is per key: a key costs a LAN attacker one
/// handshake, and what a key sent waits after its session ends (the timeout), so without
/// it memory grew with keys made up one after the other (9 MiB each for ten minutes). When
/// the total is full, a hold takes the place of the oldest operation of the peer that has
/// the most waiting (never its own): many made-up keys cannot push out a peer that has
/// fewer waiting than each of them, and one key cannot hold more than an equal share
/// against others that need room.
public struct WaitingRoomOperations: Sendable {
    public enum Outcome: Sendable, Equatable {
        /// Held until its parents (or its invitation) arrive.
        case held
        /// The same operation was already waiting: nothing changed.
        case alreadyWaiting
        /// The peer already has `limit` operations waiting: dropped (the peer sends it again
        /// on its next session, if it is honest).
        case overLimit(limit: Int)
        /// Held, in the place of the oldest operation of `displaced`, the peer with the most
        /// waiting, because `maxInAll` were waiting.
        case heldDisplacing(IdentityPublicKey)
        /// `maxInAll` operations wait and no other peer has more waiting than this one:
        /// dropped (as `overLimit`).
        case overTotal(limit: Int)
    }

    private var byPeer: [IdentityPublicKey: [(op: RoomOperation, since: MonotonicInstant)]] = [:]
    public let maxPerPeer: Int
    public let maxInAll: Int
    public let timeout: Duration
    /// Every waiting operation, over all peers (kept, not summed per call).
    public private(set) var total = 0

    public init(
        maxPerPeer: Int = RoomAdmission.maxWaitingPerSender,
        maxInAll: Int = RoomAdmission.maxWaitingInAll,
        timeout: Duration = .seconds(RoomAdmission.waitingTimeoutSeconds)
    ) {
        precondition(maxPerPeer >= 1 && maxInAll >= 1, "a limit that holds nothing")
        self.maxPerPeer = maxPerPeer
        self.maxInAll = maxInAll
        self.timeout = timeout
    }

    /// How many operations `peer` has waiting (expired ones included until its next hold).
    public func count(from peer: IdentityPublicKey) -> Int { byPeer[peer]?.count ?? 0 }

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
        var outcome = Outcome.held
        if total >= maxInAll {
            // The peer with the most waiting (`list` is out of `byPeer` meanwhile), if it
            // has more than this one would after the hold.
            guard let (largest, theirs) = byPeer.max(by: { $0.value.count < $1.value.count }),
                theirs.count > list.count + 1
            else { return .overTotal(limit: maxInAll) }
            byPeer[largest] = Array(theirs.dropFirst())
            total -= 1
            outcome = .heldDisplacing(largest)
        }
        list.append((op, now))
        total += 1
        return outcome
    }

    /// The other operations of `room` that `peer` sent and that wait (an unknown room's log
    /// arrives from one peer, create first; the invitation may be its last operation).
    public func others(of room: RoomID, from peer: IdentityPublicKey, except hash: RoomOperationHash)
        -> [RoomOperation]
    {
        (byPeer[peer] ?? []).map(\.op).filter { $0.roomID == room && $0.hash != hash }
    }

    /// Everything of `room` that `peer` sent and that waits.
    public func log(of room: RoomID, from peer: IdentityPublicKey) -> [RoomOperation] {
        (byPeer[peer] ?? []).map(\.op).filter { $0.roomID == room }
    }

    /// The rooms each peer has operations of waiting (one pass over everything held).
    public func rooms() -> [IdentityPublicKey: Set<RoomID>] {
        byPeer.mapValues { Set($0.map(\.op.roomID)) }
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
            total -= expired
            byPeer[peer] = expired == list.count ? nil : Array(list.dropFirst(expired))
        }
    }

    private mutating func remove(from peer: IdentityPublicKey, where drop: (RoomOperation) -> Bool) {
        guard let list = byPeer[peer] else { return }
        let kept = list.filter { !drop($0.op) }
        total -= list.count - kept.count
        byPeer[peer] = kept.isEmpty ? nil : kept
    }
}
