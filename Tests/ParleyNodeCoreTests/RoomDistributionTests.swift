import ParleyCore
import ParleyNodeCore
import XCTest

/// Who receives room operations and messages (moved here from TrustDecisionTests.swift).
final class RoomDistributionTests: XCTestCase {
    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let carol = IdentityKeyPair.generate()
    let dave = IdentityKeyPair.generate()

    func resolve(_ ops: [RoomOperation]) -> RoomState { RoomResolver.resolve(root: ops[0], operations: ops)! }

    func sorted(_ keys: [IdentityPublicKey]) -> [IdentityPublicKey] {
        keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    func create(_ members: [IdentityKeyPair]) throws -> RoomOperation {
        try RoomOperation.create(name: "lab", members: members.map(\.publicKey), by: alice, createdAt: 1)
    }

    func change(_ c: RoomOperation.Change, by who: IdentityKeyPair, after ops: [RoomOperation]) throws -> RoomOperation
    {
        try RoomOperation.change(c, roomID: ops[0].roomID, after: resolve(ops).heads, by: who, createdAt: 2)
    }

    func testACreateGoesToEveryInvitedMemberFromItsAuthorOnly() throws {
        let create = try create([bob, carol])
        let state = resolve([create])
        let plan = RoomDistribution.plan(for: create, before: nil, after: state, me: alice.publicKey, receivedFrom: nil)
        XCTAssertEqual(plan.operationTo, sorted([bob.publicKey, carol.publicKey]))
        XCTAssertEqual(plan.wholeLogTo, [], "a room seen for the first time has no newcomers")
        // Bob is only invited: he keeps the invitation and forwards nothing.
        let atBob = RoomDistribution.plan(
            for: create, before: nil, after: state, me: bob.publicKey, receivedFrom: alice.publicKey)
        XCTAssertEqual(atBob, .nothing)
    }

    func testAJoinGoesToEveryMemberAndAJoinedMemberForwards() throws {
        let create = try create([bob, carol])
        let join = try change(.join, by: bob, after: [create])
        let before = resolve([create])
        let after = resolve([create, join])
        let atBob = RoomDistribution.plan(for: join, before: before, after: after, me: bob.publicKey, receivedFrom: nil)
        XCTAssertEqual(atBob.operationTo, sorted([alice.publicKey, carol.publicKey]))
        let atAlice = RoomDistribution.plan(
            for: join, before: before, after: after, me: alice.publicKey, receivedFrom: bob.publicKey)
        XCTAssertEqual(atAlice.operationTo, [carol.publicKey], "alice forwards: carol may not reach bob")
    }

    func testAnAddSendsTheWholeLogToTheNewcomer() throws {
        let create = try create([bob])
        let join = try change(.join, by: bob, after: [create])
        let before = resolve([create, join])
        let add = try change(.add(dave.publicKey), by: bob, after: [create, join])
        let after = resolve([create, join, add])
        let plan = RoomDistribution.plan(
            for: add, before: before, after: after, me: alice.publicKey, receivedFrom: bob.publicKey)
        XCTAssertEqual(plan.operationTo, [dave.publicKey], "not to me, not to the author who sent it")
        XCTAssertEqual(plan.wholeLogTo, [dave.publicKey])
    }

    func testARemovalReachesTheRemovedMemberAndMessagesOnlyJoinedOnes() throws {
        let create = try create([bob, carol, dave])
        let j1 = try change(.join, by: bob, after: [create])
        let j2 = try change(.join, by: carol, after: [create, j1])
        let before = resolve([create, j1, j2])
        let remove = try change(.remove(carol.publicKey), by: alice, after: [create, j1, j2])
        let after = resolve([create, j1, j2, remove])
        XCTAssertFalse(after.isMember(carol.publicKey))
        let plan = RoomDistribution.plan(
            for: remove, before: before, after: after, me: alice.publicKey, receivedFrom: nil)
        XCTAssertEqual(
            plan.operationTo, sorted([bob.publicKey, carol.publicKey, dave.publicKey]),
            "carol must learn she was removed")
        XCTAssertEqual(
            RoomDistribution.messageRecipients(in: after, me: alice.publicKey), [bob.publicKey],
            "dave never accepted: no message waits for him")
    }

    func testRoomMessagesAreTakenFromJoinedMembersHeldFromOthersAndNotForUsOtherwise() throws {
        let create = try create([bob, carol])
        let join = try change(.join, by: bob, after: [create])
        let state = resolve([create, join])
        XCTAssertEqual(RoomDistribution.messageVerdict(in: state, from: bob.publicKey, me: alice.publicKey), .accept)
        XCTAssertEqual(
            RoomDistribution.messageVerdict(in: state, from: carol.publicKey, me: alice.publicKey), .hold,
            "carol's join may still be on its way: never acknowledged and dropped")
        XCTAssertEqual(RoomDistribution.messageVerdict(in: state, from: dave.publicKey, me: alice.publicKey), .hold)
        XCTAssertEqual(
            RoomDistribution.messageVerdict(in: state, from: bob.publicKey, me: carol.publicKey), .notForUs,
            "carol has not accepted")
        XCTAssertEqual(RoomDistribution.messageVerdict(in: nil, from: bob.publicKey, me: alice.publicKey), .notForUs)
    }
}

/// Which received operations a node keeps (issue 14, items 4 and 5).
final class RoomAdmissionTests: XCTestCase {
    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let mallory = IdentityKeyPair.generate()

    func verdict(
        _ op: RoomOperation, _ ops: [RoomOperation], root: RoomOperation?, me: IdentityKeyPair,
        count: Int = 1, unapplied: Int = 0, invitations: Int = 0
    ) -> RoomAdmission.Verdict {
        let before = root.flatMap { RoomResolver.resolve(root: $0, operations: ops) }
        let newRoot = root ?? (op.kind == .create ? op : nil)
        let after = newRoot.flatMap { RoomResolver.resolve(root: $0, operations: ops + [op]) }
        return RoomAdmission.verdict(
            for: op, before: before, after: after, me: me.publicKey, operationCount: count,
            unappliedByActor: unapplied, invitationsFromSender: invitations)
    }

    func testACreateThatNamesUsIsAnInvitationBoundedPerSender() throws {
        let fake = try RoomOperation.create(name: "team", members: [bob.publicKey], by: mallory, createdAt: 1)
        XCTAssertEqual(verdict(fake, [], root: nil, me: bob), .invitation)
        guard
            case .refuse(.tooManyInvitations, _) = verdict(
                fake, [], root: nil, me: bob,
                invitations: RoomAdmission.maxInvitationsPerSender)
        else {
            return XCTFail("a flood of creates fills only the sender's share")
        }
        XCTAssertEqual(
            verdict(fake, [], root: nil, me: alice), .wait,
            "a create that does not name us is not stored; it waits in memory for an add that may follow")
    }

    func testOperationsOfUnknownRoomsWaitAndOfLeftRoomsAreRefused() throws {
        let root = try RoomOperation.create(name: "lab", members: [bob.publicKey], by: alice, createdAt: 1)
        let join = try RoomOperation.change(.join, roomID: root.roomID, after: [root], by: bob, createdAt: 2)
        XCTAssertEqual(verdict(join, [], root: nil, me: bob), .wait)
        let out = try RoomOperation.change(
            .remove(bob.publicKey), roomID: root.roomID, after: [join], by: alice, createdAt: 3)
        let rename = try RoomOperation.change(.rename("x"), roomID: root.roomID, after: [out], by: alice, createdAt: 4)
        XCTAssertEqual(verdict(out, [join], root: root, me: bob), .keep, "bob learns of his removal")
        guard case .refuse(.notForUs, _) = verdict(rename, [join, out], root: root, me: bob) else {
            return XCTFail("after its removal a node keeps nothing more of the room")
        }
        let back = try RoomOperation.change(
            .add(bob.publicKey), roomID: root.roomID, after: [out], by: alice, createdAt: 5)
        XCTAssertEqual(verdict(back, [join, out], root: root, me: bob), .keep, "a new invitation is kept")
    }

    func testRefusedAndVoidedOperationsAreBounded() throws {
        let root = try RoomOperation.create(
            name: "lab", members: [bob.publicKey, mallory.publicKey], by: alice, createdAt: 1)
        let j1 = try RoomOperation.change(.join, roomID: root.roomID, after: [root], by: bob, createdAt: 2)
        let j2 = try RoomOperation.change(.join, roomID: root.roomID, after: [j1], by: mallory, createdAt: 3)
        let out = try RoomOperation.change(
            .remove(mallory.publicKey), roomID: root.roomID, after: [j2], by: alice, createdAt: 4)
        let backdated = try RoomOperation.change(
            .add(IdentityKeyPair.generate().publicKey), roomID: root.roomID,
            after: [j2], by: mallory, createdAt: 5)
        let ops = [j1, j2, out]
        XCTAssertEqual(verdict(backdated, ops, root: root, me: bob, count: 4), .keep, "voided, kept so all agree")
        guard
            case .refuse(.tooManyUnapplied, _) = verdict(
                backdated, ops, root: root, me: bob, count: 4,
                unapplied: RoomAdmission.maxUnappliedPerActor)
        else {
            return XCTFail("a removed member cannot fill the room with voided operations")
        }
        let kick = try RoomOperation.change(
            .remove(bob.publicKey), roomID: root.roomID, after: [j2], by: mallory, createdAt: 6)
        guard case .refuse(.notAuthorised, let why) = verdict(kick, ops, root: root, me: bob, count: 4) else {
            return XCTFail("a member removing someone is refused")
        }
        XCTAssertEqual(why, "notPermitted")
        guard
            case .refuse(.roomFull, _) = verdict(kick, ops, root: root, me: bob, count: RoomLimits.maxOperationsPerRoom)
        else {
            return XCTFail()
        }
    }
}
