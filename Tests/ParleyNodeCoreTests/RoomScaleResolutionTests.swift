import ParleyCore
import ParleyNodeCore
import RoomSyncSimulation
import SeededRandom
import XCTest

/// A room of 1,000 members resolved one operation at a time (issue 30, "Rooms as big as an
/// office"): `RoomResolution` decides each new operation against its cache, so the work per
/// operation is bounded by a constant in the common case and by O(n) for a flood of
/// concurrent forks. Work is counted (`RoomResolution.work`), not timed; BENCHMARKS.md rows
/// 16a–16c give the times.
final class RoomScaleResolutionTests: XCTestCase {
    /// Work one ordinary operation may take in a room of 1,000 members: its past (16 parents'
    /// bit sets of 30 words), its members' folds, and its concurrent operations (joins
    /// signed on views up to 8 operations old): 231 at most in BENCHMARKS.md row 16b. The
    /// full replay (`RoomResolver`) took 5.7 million for the last operation alone.
    static let ordinaryWorkBound = 1_000

    func testAThousandMemberRoomBuiltOneOperationAtATimeConverges() throws {
        let history = try OfficeRoomHistory(members: RoomLimits.maxMembers, seed: 1_000)
        let ops = history.operations
        // One adds and one join per member beyond the create's 64, one join for each of those.
        XCTAssertEqual(
            ops.count, 2 * (RoomLimits.maxMembers - RoomLimits.maxCreateMembers) + RoomLimits.maxCreateMembers - 1)
        XCTAssertLessThanOrEqual(
            ops.count + 1, RoomLimits.maxOperationsPerRoom / 2, "headroom for leaving and re-adding")
        // Three nodes receive the operations in different orders (each delayed at random by
        // up to 16 places, so some arrive before their parents and wait).
        var rng = SplitMix64(seed: 30)
        var states: [RoomState] = []
        var worstOrdinary = 0
        for node in 0..<3 {
            let arrival =
                node == 0
                ? ops
                : ops.enumerated().map { ($0.offset + Int.random(in: 0..<16, using: &rng), $0.element) }
                    .sorted { $0.0 < $1.0 }.map(\.1)
            var room = try XCTUnwrap(RoomResolution(root: history.root))
            for op in arrival {
                let before = room.work
                room.insert(op)
                if node == 0 { worstOrdinary = max(worstOrdinary, room.work - before) }
            }
            XCTAssertEqual(room.rebuilds, 1, "node \(node): every operation was decided alone")
            states.append(room.state)
        }
        XCTAssertLessThanOrEqual(worstOrdinary, Self.ordinaryWorkBound)
        XCTAssertEqual(states[0].joined.count, RoomLimits.maxMembers)
        XCTAssertEqual(states[1], states[0])
        XCTAssertEqual(states[2], states[0])
        // The whole rule run at once (what a node does at start) agrees.
        XCTAssertEqual(RoomResolution(root: history.root, operations: ops.reversed())?.state, states[0])
        // And the room is full: one more add is refused.
        var full = try XCTUnwrap(RoomResolution(root: history.root, operations: ops))
        var extraSeed = [UInt8](repeating: 0x5a, count: 32)
        let extra = try IdentityKeyPair(seed: SecretBytes(consuming: &extraSeed))
        let add = try RoomOperation.change(
            .add(extra.publicKey), roomID: history.root.roomID, after: full.heads, by: history.keys[0], createdAt: 9)
        full.insert(add)
        XCTAssertEqual(full.state.rejected[add.hash], .roomFull)
    }

    /// A joined member floods the room with forks: operations signed on an old view (its own
    /// join), each concurrent with everything after it, until the room's operation limit.
    /// Each is decided alone (no rebuild) and costs O(n): its past, the scan of the graph for
    /// what it is concurrent with, and (once the room is full) the member count.
    func testAFloodOfForksOnAnOldViewStaysWithinTheBound() throws {
        let history = try OfficeRoomHistory(members: 200, seed: 200)
        var room = try XCTUnwrap(RoomResolution(root: history.root, operations: history.operations))
        let flooder = history.keys[100]
        let oldView = try XCTUnwrap(history.operations.first { $0.actor == flooder.publicKey && $0.kind == .join })
        var rng = SplitMix64(seed: 0xf00d)
        var worst = 0
        var forks = 0
        var sent: [RoomOperation] = []
        // Bounded: the room's operation limit.
        while room.operationCount < RoomLimits.maxOperationsPerRoom {
            var seed = (0..<32).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let stranger = try IdentityKeyPair(seed: SecretBytes(consuming: &seed))
            let fork = try RoomOperation.change(
                .add(stranger.publicKey), roomID: history.root.roomID, after: [oldView], by: flooder,
                createdAt: UInt64(forks))
            let before = room.work
            room.insert(fork)
            sent.append(fork)
            worst = max(worst, room.work - before)
            forks += 1
        }
        XCTAssertEqual(room.rebuilds, 1, "forks are decided alone")
        // Each fork is judged in its own past (200 members), where the room is not full:
        // concurrent adds on old views can take a room past `maxMembers`, and what bounds
        // them is `maxOperationsPerRoom` (the rule, unchanged; docs/PROTOCOL.md "Limits").
        XCTAssertEqual(room.state.members.count, 200 + forks)
        // The whole rule run at once over the same operations agrees.
        XCTAssertEqual(RoomResolution(root: history.root, operations: history.operations + sent)?.state, room.state)
        // O(n): a few steps per operation held, plus the member count of a full room.
        let bound = 4 * RoomLimits.maxOperationsPerRoom + 4 * RoomLimits.maxMembers
        XCTAssertLessThanOrEqual(worst, bound, "\(forks) forks")
    }
}
