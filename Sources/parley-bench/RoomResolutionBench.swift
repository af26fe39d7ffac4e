import Foundation
import ParleyCore
import RoomSyncSimulation

/// Row 16: resolving a room of 1,000 members (issue 30, "Rooms as big as an office"), in
/// process, in this build: `RoomResolution` (what a node runs: each new operation decided
/// against the cache) against `RoomResolver.resolve` (the full replay the node ran after
/// every operation before). Work is counted in the same unit by both (an operation folded
/// or examined, a bit-set word), so it does not depend on this machine's load.
///
/// - 16a/16b: the room built one operation at a time (`OfficeRoomHistory`: the create's
///   64, 936 adds, every member's join on a view up to 8 operations old): time and work in
///   all; the reference is ONE full replay of the same operations, what the old node paid
///   for each new operation at that size.
/// - 16c/16d: a joined member floods forks (adds signed on its own old join) until the
///   room holds `RoomLimits.maxOperationsPerRoom`: the worst single operation.
/// - 16e/16f: then the owner removes the flooder, concurrently with all its forks (the
///   removal voids them): the worst case this resolution allows, a rebuild of the whole
///   room, against one full replay of the old rule where measurable.
struct RoomResolutionBench {
    let scale: BenchScale

    func run() -> [BenchRow] {
        do {
            return try measure()
        } catch {
            return [
                .skipped(
                    id: "16a", measure: "Room of 1,000: resolved op by op", unit: "s", referenceName: "full replay",
                    goal: .none, why: "\(error)")
            ]
        }
    }

    private func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private func measure() throws -> [BenchRow] {
        let members = scale.smoke ? 300 : RoomLimits.maxMembers
        let history = try OfficeRoomHistory(members: members, seed: 16)
        let ops = history.operations
        let clock = ContinuousClock()

        // 16a/16b: op by op.
        guard var room = RoomResolution(root: history.root) else { throw BenchError.unavailable("no room") }
        let buildStart = clock.now
        var worstOrdinary = 0
        for op in ops {
            let before = room.work
            room.insert(op)
            worstOrdinary = max(worstOrdinary, room.work - before)
        }
        let buildTime = seconds(clock.now - buildStart)
        let buildWork = room.work
        let buildRebuilds = room.rebuilds - 1
        guard room.state.joined.count == members else { throw BenchError.unavailable("the room did not converge") }
        var oldWork = 0
        let oldStart = clock.now
        _ = RoomResolver.resolve(root: history.root, operations: ops, work: &oldWork)
        let oldTime = seconds(clock.now - oldStart)

        // 16c/16d: a flood of forks up to the operation limit.
        let flooder = history.keys[members / 2]
        guard let oldView = ops.first(where: { $0.actor == flooder.publicKey && $0.kind == .join }) else {
            throw BenchError.unavailable("no join")
        }
        let heads = room.heads
        var worstFork = 0
        var worstForkTime = 0.0
        var forks = 0
        var floodOps = ops
        var seedBytes = [UInt8](repeating: 0, count: 32)
        while room.operationCount < RoomLimits.maxOperationsPerRoom - 1 {
            forks += 1
            seedBytes[0] = UInt8(truncatingIfNeeded: forks)
            seedBytes[1] = UInt8(truncatingIfNeeded: forks >> 8)
            var s = seedBytes
            let stranger = try IdentityKeyPair(seed: SecretBytes(consuming: &s))
            let fork = try RoomOperation.change(
                .add(stranger.publicKey), roomID: history.root.roomID, after: [oldView], by: flooder,
                createdAt: UInt64(forks))
            let before = room.work
            let t0 = clock.now
            room.insert(fork)
            floodOps.append(fork)
            worstForkTime = max(worstForkTime, seconds(clock.now - t0))
            worstFork = max(worstFork, room.work - before)
        }
        let floodRebuilds = room.rebuilds - 1

        // 16e/16f: the owner's removal of the flooder, concurrent with every fork.
        let removal = try RoomOperation.change(
            .remove(flooder.publicKey), roomID: history.root.roomID, after: heads, by: history.keys[0], createdAt: 1)
        let before = room.work
        let t0 = clock.now
        room.insert(removal)
        let rebuildTime = seconds(clock.now - t0)
        let rebuildWork = room.work - before
        let voided = room.state.rejected.values.filter { $0 == .removedConcurrently }.count
        let n = room.operationCount
        // The old rule over the same operations: a minute or more in a debug build, so
        // only in a full run.
        var oldRebuildWork: Int?
        var oldRebuildTime: Double?
        if !scale.smoke {
            var w = 0
            let t1 = clock.now
            let old = RoomResolver.resolve(root: history.root, operations: floodOps + [removal], work: &w)
            oldRebuildTime = seconds(clock.now - t1)
            oldRebuildWork = w
            guard old == room.state else { throw BenchError.unavailable("the full replay disagrees") }
        }

        let setup =
            "\(members) members (OfficeRoomHistory: the create's \(RoomLimits.maxCreateMembers), one add and one join "
            + "for each other, joins signed on views up to 8 operations old), \(ops.count + 1) operations"
        return [
            BenchRow(
                id: "16a", measure: "Room of \(members): resolved op by op, time in all", unit: "s",
                parley: buildTime, reference: oldTime,
                referenceName: "ONE full replay of the same operations (the old node's cost per new operation)",
                goal: .none, note: "\(setup); \(buildRebuilds) rebuilds while building"),
            BenchRow(
                id: "16b", measure: "Room of \(members): resolved op by op, work in all", unit: "steps",
                parley: Double(buildWork), reference: Double(oldWork),
                referenceName: "ONE full replay of the same operations", goal: .none,
                note: "worst single operation \(worstOrdinary) steps; a step is an operation folded or examined or a "
                    + "bit-set word"),
            BenchRow(
                id: "16c", measure: "Flood of forks to \(RoomLimits.maxOperationsPerRoom) operations: worst operation",
                unit: "steps", parley: Double(worstFork), reference: nil,
                referenceName: "(the old node replayed the whole room for each: 16e's reference)", goal: .none,
                note: "\(forks) adds signed on the flooder's own join, each concurrent with everything after it; "
                    + "\(floodRebuilds) rebuilds"),
            BenchRow(
                id: "16d", measure: "Flood of forks: worst operation, time", unit: "ms",
                parley: worstForkTime * 1000, reference: nil, referenceName: "—", goal: .none),
            BenchRow(
                id: "16e", measure: "Removal concurrent with \(voided) forks at \(n) operations: rebuild, work",
                unit: "steps", parley: Double(rebuildWork), reference: oldRebuildWork.map(Double.init),
                referenceName: "ONE full replay of the same operations (full run only)", goal: .none,
                note: "the worst case the resolution allows: a lowering concurrent with what it voids rebuilds the room"
            ),
            BenchRow(
                id: "16f", measure: "Removal concurrent with the forks: rebuild, time", unit: "s",
                parley: rebuildTime, reference: oldRebuildTime,
                referenceName: "ONE full replay of the same operations (full run only)", goal: .none)
        ]
    }
}
