import ParleyCore
import SeededRandom
import XCTest

/// `RoomResolution` (incremental) against `RoomResolver.resolve` (the full replay, the
/// reference) over the random operation graphs of `RoomResolverPropertyTests` (concurrent
/// adds, removals, role changes, leaving, stepping down, signing from the past): after
/// every operation, in parents-first and in shuffled arrival orders (waiting operations,
/// late parents), with duplicates, foreign operations and a second create mixed in, the
/// incremental state equals a full resolution of what arrived so far. Seeded: a failure
/// prints its seed and reproduces exactly.
extension RoomResolverPropertyTests {
    func testIncrementalResolutionEqualsFullReplayAfterEveryOperation() throws {
        var fast = 0
        var rebuilt = 0
        var threatenedFast = 0
        let outsider = try IdentityKeyPair(seed: ExampleKeys.seed(from: 0xe0))
        for seed in 0..<UInt64(Self.graphs) {
            let h = try randomHistory(seed: seed, steps: Self.stepsPerGraph)
            var rng = SplitMix64(seed: seed ^ 0x0c0ffee)
            // Operations that are not the room's graph: a foreign room's create and one of
            // its operations, and a second create claiming this room's id is impossible (the
            // id is the create's hash), so a create of another room stands for it.
            let foreign = try RoomOperation.create(
                name: "other", members: [], by: outsider, createdAt: 1,
                nonce: RoomID(bytes: [UInt8](repeating: 7, count: 16))!)
            let foreignChange = try RoomOperation.change(
                .rename("x"), roomID: foreign.roomID, after: [foreign], by: outsider, createdAt: 2)
            let parentsFirst = h.operations
            for (order, name) in [(parentsFirst, "parents first"), (parentsFirst.shuffled(using: &rng), "shuffled")] {
                var arrivals = order
                arrivals.insert(foreign, at: Int.random(in: 0...arrivals.count, using: &rng))
                arrivals.insert(foreignChange, at: Int.random(in: 0...arrivals.count, using: &rng))
                if let again = order.randomElement(using: &rng) {
                    arrivals.insert(again, at: Int.random(in: 0...arrivals.count, using: &rng))
                }
                var incremental = try XCTUnwrap(RoomResolution(root: h.root))
                var soFar: [RoomOperation] = []
                for op in arrivals {
                    let before = incremental.fastInserts
                    incremental.insert(op)
                    soFar.append(op)
                    let reference = RoomResolver.resolve(root: h.root, operations: soFar)
                    XCTAssertEqual(incremental.state, reference, "seed \(seed), \(name), after \(soFar.count)")
                    if incremental.state != reference { return }
                    if incremental.fastInserts > before,
                        reference?.rejected[op.hash] == .removedConcurrently
                            || reference?.rejected[op.hash] == .overruled
                    {
                        threatenedFast += 1
                    }
                }
                fast += incremental.fastInserts
                rebuilt += incremental.rebuilds - 1
                // Built at once from the same operations: the same again.
                XCTAssertEqual(
                    RoomResolution(root: h.root, operations: arrivals)?.state,
                    RoomResolver.resolve(root: h.root, operations: arrivals), "seed \(seed)")
            }
        }
        // Both paths are exercised: most operations are decided alone, voided ones too,
        // and concurrent lowerings rebuild (these histories are hostile: a quarter of
        // their operations are signed from the past, mostly removals and demotions, so
        // about one in five rebuilds; an office's room grows without any, see
        // `RoomScaleResolutionTests`).
        XCTAssertGreaterThan(fast, rebuilt * 3, "fast \(fast), rebuilt \(rebuilt)")
        XCTAssertGreaterThan(rebuilt, Self.graphs / 4)
        XCTAssertGreaterThan(threatenedFast, Self.graphs / 10)
    }
}
