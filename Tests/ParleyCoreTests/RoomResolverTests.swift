import XCTest
import ParleyCore

/// The convergence rule: who may change membership, how concurrent changes resolve, and
/// that the result never depends on arrival order.
final class RoomResolverTests: XCTestCase {
    static func key(_ first: UInt8) -> IdentityKeyPair {
        try! IdentityKeyPair(seed: ExampleKeys.seed(from: first))  // fixed 32-byte seed
    }
    let alice = ExampleKeys.aliceIdentity
    let bob = ExampleKeys.bobIdentity
    let carol = key(0x80)
    let dave = key(0xa0)
    let eve = key(0xc0)
    let roomID = RoomID(bytes: Array(0xa0...0xaf))!  // 16 bytes by construction
    var clock: UInt64 = 0

    func create(by actor: IdentityKeyPair, _ members: [IdentityKeyPair], room: RoomID? = nil) throws -> RoomOperation {
        clock += 1
        return try RoomOperation.create(roomID: room ?? roomID, name: "lab", members: members.map(\.publicKey),
                                        by: actor, createdAt: clock)
    }

    func add(_ who: IdentityKeyPair, by actor: IdentityKeyPair, after parents: RoomOperation...) throws -> RoomOperation {
        clock += 1
        return try RoomOperation.change(.add(who.publicKey), roomID: roomID, after: parents, by: actor, createdAt: clock)
    }

    func remove(_ who: IdentityKeyPair, by actor: IdentityKeyPair, after parents: RoomOperation...) throws -> RoomOperation {
        clock += 1
        return try RoomOperation.change(.remove(who.publicKey), roomID: roomID, after: parents, by: actor, createdAt: clock)
    }

    func resolve(_ root: RoomOperation, _ ops: [RoomOperation]) throws -> RoomState {
        try XCTUnwrap(RoomResolver.resolve(root: root, operations: ops))
    }

    func members(_ keys: IdentityKeyPair...) -> [IdentityPublicKey] { keys.map(\.publicKey).sorted() }

    /// Resolves every ordering (up to 6 operations: 720) and checks they all agree.
    func assertOrderIndependent(_ root: RoomOperation, _ ops: [RoomOperation], file: StaticString = #filePath, line: UInt = #line) throws -> RoomState {
        let reference = try resolve(root, ops)
        func permutations(_ a: [RoomOperation]) -> [[RoomOperation]] {
            guard a.count > 1 else { return [a] }
            return a.indices.flatMap { i -> [[RoomOperation]] in
                var rest = a
                let x = rest.remove(at: i)
                return permutations(rest).map { [x] + $0 }
            }
        }
        for order in permutations(ops) {
            XCTAssertEqual(try resolve(root, order), reference, file: file, line: line)
        }
        // Duplicates and the root repeated change nothing.
        XCTAssertEqual(try resolve(root, ops + ops + [root]), reference, file: file, line: line)
        return reference
    }

    // MARK: - Authority

    func testCreateSetsNameAndMembers() throws {
        let root = try create(by: alice, [bob])
        let s = try resolve(root, [])
        XCTAssertEqual(s.name, "lab")
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.creator, alice.publicKey)
        XCTAssertEqual(s.version, 1)
        XCTAssertEqual(s.heads, [root])
        XCTAssertNil(RoomResolver.resolve(root: try add(carol, by: alice, after: root), operations: []))
    }

    func testAnyMemberMayAddAndRemoveAnyoneIncludingItself() throws {
        let root = try create(by: alice, [bob])
        let addCarol = try add(carol, by: bob, after: root)                    // not the creator
        let removeAlice = try remove(alice, by: carol, after: addCarol)        // a newer member removes the creator
        let bobLeaves = try remove(bob, by: bob, after: removeAlice)           // leaving
        let s = try resolve(root, [addCarol, removeAlice, bobLeaves])
        XCTAssertEqual(s.members, members(carol))
        XCTAssertEqual(s.applied, [root, addCarol, removeAlice, bobLeaves].map(\.hash))
        XCTAssertEqual(s.version, 4)
        XCTAssertTrue(s.rejected.isEmpty)
    }

    func testNonMemberCannotChangeMembership() throws {
        let root = try create(by: alice, [bob])
        let byOutsider = try add(eve, by: eve, after: root)
        let s = try resolve(root, [byOutsider])
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.rejected[byOutsider.hash], .notMember)
    }

    func testRemovedMemberCannotActAfterSeeingItsRemoval() throws {
        let root = try create(by: alice, [bob, carol])
        let out = try remove(carol, by: alice, after: root)
        let late = try add(eve, by: carol, after: out)
        let s = try resolve(root, [out, late])
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.rejected[late.hash], .notMember)
    }

    func testReaddedMemberMayActAgain() throws {
        let root = try create(by: alice, [bob, carol])
        let out = try remove(carol, by: alice, after: root)
        let back = try add(carol, by: bob, after: out)
        let acts = try add(dave, by: carol, after: back)
        let s = try assertOrderIndependent(root, [out, back, acts])
        XCTAssertEqual(s.members, members(alice, bob, carol, dave))
    }

    // MARK: - Concurrency

    func testConcurrentIndependentChangesBothApplyInAnyOrder() throws {
        let root = try create(by: alice, [bob, carol])
        let addDave = try add(dave, by: alice, after: root)
        let removeCarol = try remove(carol, by: bob, after: root)
        let s = try assertOrderIndependent(root, [addDave, removeCarol])
        XCTAssertEqual(s.members, members(alice, bob, dave))
        XCTAssertEqual(Set(s.heads.map(\.hash)), [addDave.hash, removeCarol.hash])
        // The next operation follows both heads.
        let next = try RoomOperation.change(.add(eve.publicKey), roomID: roomID, after: s.heads, by: alice, createdAt: 99)
        XCTAssertEqual(next.sequence, 3)
        XCTAssertEqual(try resolve(root, [addDave, removeCarol, next]).members, members(alice, bob, dave, eve))
    }

    func testConcurrentAddAndRemoveOfTheSameMemberResolveByHash() throws {
        let root = try create(by: alice, [bob, carol])
        let removeCarol = try remove(carol, by: alice, after: root)
        let addCarolAgain = try add(carol, by: bob, after: root)   // a no-op add, concurrent with the removal
        let s = try assertOrderIndependent(root, [removeCarol, addCarolAgain])
        // Same sequence: the one with the larger hash is applied last and decides.
        let last = [removeCarol, addCarolAgain].max { $0.hash < $1.hash }!
        XCTAssertEqual(s.isMember(carol.publicKey), last.kind == .add)
    }

    func testRemovalWinsOverConcurrentOperationsOfTheRemoved() throws {
        // Carol, removed, signs an add that pretends not to have seen her removal.
        let root = try create(by: alice, [bob, carol])
        let out = try remove(carol, by: alice, after: root)
        let backdated = try add(eve, by: carol, after: root)
        let s = try assertOrderIndependent(root, [out, backdated])
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.rejected[backdated.hash], .removedConcurrently)
        XCTAssertFalse(s.isMember(eve.publicKey))
    }

    func testRemovedMemberCannotUndoItsRemovalByABackdatedCounterRemoval() throws {
        // Carol answers her removal with a removal of alice that claims to be concurrent:
        // both are voided, carol does not take over the room, and eve (carol's sybil) stays out.
        let root = try create(by: alice, [bob, carol])
        let out = try remove(carol, by: alice, after: root)
        let counter = try remove(alice, by: carol, after: root)
        let sybil = try add(eve, by: carol, after: root)
        let s = try assertOrderIndependent(root, [out, counter, sybil])
        XCTAssertTrue(s.isMember(alice.publicKey))
        XCTAssertFalse(s.isMember(eve.publicKey))
        XCTAssertEqual(s.rejected[counter.hash], .removedConcurrently)
        XCTAssertEqual(s.rejected[out.hash], .removedConcurrently)
        XCTAssertEqual(s.rejected[sybil.hash], .removedConcurrently)
        // A member that saw both removes carol for good.
        let again = try remove(carol, by: bob, after: out, counter, sybil)
        let after = try resolve(root, [out, counter, sybil, again])
        XCTAssertEqual(after.members, members(alice, bob))
    }

    func testMutualConcurrentRemovalsCancelOut() throws {
        let root = try create(by: alice, [bob, carol])
        let aliceRemovesBob = try remove(bob, by: alice, after: root)
        let bobRemovesAlice = try remove(alice, by: bob, after: root)
        let s = try assertOrderIndependent(root, [aliceRemovesBob, bobRemovesAlice])
        XCTAssertEqual(s.members, members(alice, bob, carol))
    }

    func testLongerHistoryIsOrderIndependent() throws {
        let root = try create(by: alice, [bob])
        let a1 = try add(carol, by: alice, after: root)
        let b1 = try add(dave, by: bob, after: root)
        let c1 = try remove(bob, by: carol, after: a1)
        let d1 = try add(eve, by: dave, after: b1)
        let m = try remove(dave, by: alice, after: c1, d1)
        let s = try assertOrderIndependent(root, [a1, b1, c1, d1, m])
        // c1 (carol removes bob) is concurrent with b1 (bob adds dave): the removal wins and
        // b1 is void, so dave never became a member and d1 (dave adds eve) has no authority.
        XCTAssertEqual(s.rejected[b1.hash], .removedConcurrently)
        XCTAssertEqual(s.rejected[d1.hash], .notMember)
        XCTAssertEqual(s.members, members(alice, carol))
    }

    func testAFullRoomHistoryResolves() throws {
        // As many operations as a room may hold: pasts span several 64-bit words.
        let root = try create(by: alice, [bob])
        var ops: [RoomOperation] = []
        var last = root
        for i in 1..<RoomLimits.maxOperationsPerRoom {
            let who = i.isMultiple(of: 2) ? bob : alice   // both act, each seeing the other
            last = i.isMultiple(of: 2) ? try remove(dave, by: who, after: last) : try add(dave, by: who, after: last)
            ops.append(last)
        }
        let s = try resolve(root, ops.reversed())
        XCTAssertEqual(s.applied.count, RoomLimits.maxOperationsPerRoom)
        XCTAssertEqual(s.version, UInt64(RoomLimits.maxOperationsPerRoom))
        XCTAssertEqual(s.isMember(dave.publicKey), (RoomLimits.maxOperationsPerRoom - 1) % 2 == 1)
        XCTAssertEqual(s.heads, [last])
    }

    // MARK: - Malformed graphs

    func testMissingParentWaitsUntilItArrives() throws {
        let root = try create(by: alice, [bob])
        let a = try add(carol, by: alice, after: root)
        let b = try add(dave, by: carol, after: a)
        let partial = try resolve(root, [b])
        XCTAssertEqual(partial.waiting, [b.hash])
        XCTAssertEqual(partial.members, members(alice, bob))
        XCTAssertEqual(partial.heads, [root])
        XCTAssertEqual(try resolve(root, [b, a]).members, members(alice, bob, carol, dave))
    }

    func testOtherRoomsAndSecondCreatesAreRejected() throws {
        let root = try create(by: alice, [bob])
        let foreign = try create(by: alice, [bob], room: RoomID(bytes: [UInt8](repeating: 7, count: 16))!)  // 16 bytes
        let rival = try create(by: bob, [alice, eve])
        let onRival = try RoomOperation.change(.add(dave.publicKey), roomID: roomID, after: [rival], by: bob, createdAt: 1)
        let s = try resolve(root, [foreign, rival, onRival])
        XCTAssertEqual(s.rejected[foreign.hash], .otherRoom)
        XCTAssertEqual(s.rejected[rival.hash], .secondCreate)
        XCTAssertEqual(s.rejected[onRival.hash], .rejectedAncestor)
        XCTAssertEqual(s.members, members(alice, bob))
    }

    func testWrongSequenceIsRejectedWithItsDescendants() throws {
        // An operation's sequence must be one more than its highest parent's; the signer
        // computes it, so a wrong one can only come from a hand-built operation.
        let root = try create(by: alice, [bob])
        let a = try add(carol, by: alice, after: root)
        let skipping = try hand(.add(dave.publicKey), sequence: 5, parents: [root], by: alice)
        let child = try add(eve, by: alice, after: skipping)
        let s = try resolve(root, [a, skipping, child])
        XCTAssertEqual(s.rejected[skipping.hash], .badSequence)
        XCTAssertEqual(s.rejected[child.hash], .rejectedAncestor)
        XCTAssertEqual(s.members, members(alice, bob, carol))
    }

    /// Signs an operation with an arbitrary sequence, bypassing `RoomOperation.change`.
    func hand(_ change: RoomOperation.Change, sequence: UInt64, parents: [RoomOperation], by actor: IdentityKeyPair) throws -> RoomOperation {
        guard case .add(let target) = change else { throw XCTSkip("only adds") }
        var b: [UInt8] = [1, 2] + roomID.bytes
        b += (0..<8).map { UInt8(truncatingIfNeeded: sequence >> UInt64(56 - 8 * $0)) }
        b += [UInt8](repeating: 0, count: 8)
        b += actor.publicKey.bytes
        let hashes = parents.map(\.hash).sorted()
        b.append(UInt8(hashes.count))
        for h in hashes { b += h.bytes }
        b += target.bytes
        return try RoomOperation.decode(b + actor.sign(Array("parley-room-op-v1\0".utf8) + b))
    }
}
