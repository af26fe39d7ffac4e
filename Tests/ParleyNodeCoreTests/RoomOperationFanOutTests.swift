import ParleyCore
import ParleyNodeCore
import SeededRandom
import XCTest

/// Operation summaries (issue 30): a room's operations spread like its messages, bounded,
/// and members that compare the heads of their graphs fill each other's gaps.
final class RoomOperationFanOutTests: XCTestCase {
    let creator = IdentityKeyPair.generate()
    let others = (0..<40).map { _ in IdentityKeyPair.generate() }

    /// A room of the creator and 40 members, all joined.
    func room() throws -> [RoomOperation] {
        var ops = [
            try RoomOperation.create(
                name: "hall", members: others.prefix(RoomLimits.maxCreateMembers - 1).map(\.publicKey), by: creator,
                createdAt: 1)
        ]
        for k in others {
            let state = RoomResolver.resolve(root: ops[0], operations: ops)!
            ops.append(try RoomOperation.change(.join, roomID: ops[0].roomID, after: state.heads, by: k, createdAt: 2))
        }
        return ops
    }

    func plan(
        _ op: RoomOperation, _ ops: [RoomOperation], me: IdentityKeyPair, from: IdentityPublicKey?,
        summarizing: Set<IdentityPublicKey>
    ) -> RoomDistribution.OperationPlan {
        let before = RoomResolver.resolve(root: ops[0], operations: ops)!
        let after = RoomResolver.resolve(root: ops[0], operations: ops + [op])!
        let full = RoomDistribution.plan(for: op, before: before, after: after, me: me.publicKey, receivedFrom: from)
        var rng = SplitMix64(seed: 3)
        return RoomOperationFanOut.narrow(
            full, for: op, after: after, me: me.publicKey, summarizing: summarizing, online: [], using: &rng)
    }

    /// The bytes one operation costs its actor, and a member that passes it on, no longer
    /// grow with the room: 8 and 4 records, not one per member.
    func testAnOperationGoesToABoundedNumberOfMembersThatCompareSummaries() throws {
        let ops = try room()
        let state = RoomResolver.resolve(root: ops[0], operations: ops)!
        let everyone = Set(others.map(\.publicKey) + [creator.publicKey])
        let rename = try RoomOperation.change(
            .rename("lobby"), roomID: ops[0].roomID, after: state.heads, by: creator, createdAt: 3)
        XCTAssertEqual(
            plan(rename, ops, me: creator, from: nil, summarizing: everyone).operationTo.count,
            RoomFanOut.directRecipients)
        XCTAssertEqual(
            plan(rename, ops, me: others[5], from: creator.publicKey, summarizing: everyone).operationTo.count,
            RoomFanOut.relayPeers)
        // Without summaries (older nodes), every member as before.
        XCTAssertEqual(plan(rename, ops, me: creator, from: nil, summarizing: []).operationTo.count, 40)
        let old = Set(others.suffix(10).map(\.publicKey))
        let mixed = plan(rename, ops, me: creator, from: nil, summarizing: everyone.subtracting(old)).operationTo
        XCTAssertTrue(old.isSubset(of: Set(mixed)), "a member without summaries gets it from whoever keeps it")
        XCTAssertEqual(mixed.count, 10 + RoomFanOut.directRecipients)
    }

    /// A removal always reaches its target; a create all it lists; a newcomer's whole log
    /// comes from the member that added it only.
    func testTheRemovedTheCreatedAndNewcomersAreNotLeftToChance() throws {
        let ops = try room()
        let state = RoomResolver.resolve(root: ops[0], operations: ops)!
        let everyone = Set(others.map(\.publicKey) + [creator.publicKey])
        let target = others[17].publicKey
        let remove = try RoomOperation.change(
            .remove(target), roomID: ops[0].roomID, after: state.heads, by: creator, createdAt: 3)
        XCTAssertTrue(plan(remove, ops, me: creator, from: nil, summarizing: everyone).operationTo.contains(target))
        XCTAssertTrue(
            plan(remove, ops, me: others[3], from: creator.publicKey, summarizing: everyone).operationTo.contains(
                target))
        let newcomer = IdentityKeyPair.generate().publicKey
        let add = try RoomOperation.change(
            .add(newcomer), roomID: ops[0].roomID, after: state.heads, by: creator, createdAt: 3)
        let all = everyone.union([newcomer])
        XCTAssertEqual(plan(add, ops, me: creator, from: nil, summarizing: all).wholeLogTo, [newcomer])
        XCTAssertEqual(plan(add, ops, me: others[3], from: creator.publicKey, summarizing: all).wholeLogTo, [])
        XCTAssertEqual(
            plan(add, ops, me: others[3], from: creator.publicKey, summarizing: everyone).wholeLogTo, [newcomer],
            "a newcomer without summaries gets the log as before")
        var rng = SplitMix64(seed: 1)
        let create = ops[0]
        let created = RoomResolver.resolve(root: create, operations: [create])!
        let createPlan = RoomDistribution.plan(
            for: create, before: nil, after: created, me: creator.publicKey, receivedFrom: nil)
        XCTAssertEqual(createPlan.operationTo.count, 40)
        XCTAssertEqual(
            RoomOperationFanOut.narrow(
                createPlan, for: create, after: state, me: creator.publicKey, summarizing: everyone, online: [],
                using: &rng),
            createPlan)
    }

    func testHeadsAndWhatAPeerLacks() throws {
        let ops = try room()
        let byHash = Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) })
        let heads = RoomOperationFanOut.heads(of: byHash)
        XCTAssertEqual(heads, RoomResolver.resolve(root: ops[0], operations: ops)!.heads.map(\.hash).sorted())
        XCTAssertEqual(RoomOperationFanOut.missing(from: byHash, theirHeads: heads).send, [])
        // A peer that holds only the first half lacks the second, parents first.
        let half = Array(ops.prefix(20))
        let halfHeads = RoomOperationFanOut.heads(of: Dictionary(uniqueKeysWithValues: half.map { ($0.hash, $0) }))
        let (send, more) = RoomOperationFanOut.missing(from: byHash, theirHeads: halfHeads)
        XCTAssertEqual(send.map(\.hash), ops.dropFirst(20).sorted(by: RoomResolver.precedes).map(\.hash))
        XCTAssertFalse(more)
        // A peer that names a head this node lacks holds more: this node answers.
        let (_, theyHaveMore) = RoomOperationFanOut.missing(
            from: Dictionary(uniqueKeysWithValues: half.map { ($0.hash, $0) }), theirHeads: heads)
        XCTAssertTrue(theyHaveMore)
    }

    func testTheSummaryRecordRoundTripsAndIsStrict() throws {
        let ops = try room()
        let have = RoomOperationsHave(roomID: ops[0].roomID, heads: ops.prefix(3).map(\.hash))
        XCTAssertEqual(try AppRecord.decode(type: 0x19, payload: have.encoded()), .roomOpsHave(have))
        XCTAssertEqual(AppRecord.RecordType.roomOpsHave.feature, .roomOperationSummaries)
        var unsorted = ops[0].roomID.bytes + [2]
        unsorted += max(ops[1].hash, ops[2].hash).bytes + min(ops[1].hash, ops[2].hash).bytes
        XCTAssertThrowsError(try AppRecord.decode(type: 0x19, payload: unsorted))
        XCTAssertThrowsError(try AppRecord.decode(type: 0x19, payload: have.encoded() + [0]))
        XCTAssertThrowsError(try AppRecord.decode(type: 0x19, payload: ops[0].roomID.bytes + [65]))
    }
}
