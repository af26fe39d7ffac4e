import ParleyCore
import SeededRandom

/// A room grown as an office grows it, one signed operation at a time (issue 30, "Rooms as
/// big as an office"): the creator lists the first `RoomLimits.maxCreateMembers` and adds
/// everyone else one by one; every invited member joins, signing on the heads its node had
/// then, which lag behind by up to `lag` operations (its node had not heard of the newest
/// adds yet), so joins are concurrent with adds, as on a real LAN. Seeded: the same
/// arguments give the same operations. For tests and the bench of `RoomResolution`.
public struct OfficeRoomHistory {
    public let keys: [IdentityKeyPair]
    public let root: RoomOperation
    /// Every operation after the create, in the order they were signed (parents first).
    public let operations: [RoomOperation]

    public init(members: Int, seed: UInt64, lag: Int = 8) throws {
        precondition(members >= 2 && members <= RoomLimits.maxMembers && lag >= 1)
        var rng = SplitMix64(seed: seed)
        let pairs = try SeededIdentities.make(members, using: &rng)
        let creator = pairs[0]
        var nonce = [UInt8](repeating: 0, count: RoomID.length)
        for b in nonce.indices { nonce[b] = UInt8(truncatingIfNeeded: rng.next()) }
        let root = try RoomOperation.create(
            name: "office", members: pairs.prefix(RoomLimits.maxCreateMembers).map(\.publicKey), by: creator,
            createdAt: 1, nonce: RoomID(exactly: nonce))
        guard var room = RoomResolution(root: root) else { throw RoomSyncSimulation.SimulationError.roomDidNotResolve }
        var ops: [RoomOperation] = []
        // The heads after each operation, so a join can be signed on an older view.
        var headsAfter: [[RoomOperation]] = [[root]]
        // Invited, not joined yet: member index and the step its invitation was applied.
        var pending: [(member: Int, since: Int)] = (1..<min(members, RoomLimits.maxCreateMembers)).map { ($0, 0) }
        var nextToAdd = RoomLimits.maxCreateMembers
        var clock: UInt64 = 2
        // Bounded: every step adds or joins one member, each once.
        while nextToAdd < members || !pending.isEmpty {
            let op: RoomOperation
            clock += 1
            if nextToAdd < members, pending.isEmpty || Bool.random(using: &rng) {
                op = try RoomOperation.change(
                    .add(pairs[nextToAdd].publicKey), roomID: root.roomID, after: headsAfter[headsAfter.count - 1],
                    by: creator, createdAt: clock)
                pending.append((nextToAdd, headsAfter.count))
                nextToAdd += 1
            } else {
                let (member, since) = pending.remove(at: Int.random(in: 0..<pending.count, using: &rng))
                let newest = headsAfter.count - 1
                let view = Int.random(in: max(since, newest - lag + 1)...newest, using: &rng)
                op = try RoomOperation.change(
                    .join, roomID: root.roomID, after: headsAfter[view], by: pairs[member], createdAt: clock)
            }
            room.insert(op)
            ops.append(op)
            headsAfter.append(room.heads)
        }
        guard room.state.joined.count == members else { throw RoomSyncSimulation.SimulationError.roomDidNotResolve }
        keys = pairs
        self.root = root
        operations = ops
    }
}
