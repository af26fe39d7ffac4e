import ParleyCore
import XCTest

/// The convergence rule: roles, invitations, who may do what, how concurrent changes
/// resolve, that the result never depends on arrival order, and the attacks of issue 14
/// as operation graphs (each failed against the version-1 rule).
final class RoomResolverTests: XCTestCase {
    static func key(_ first: UInt8) -> IdentityKeyPair {
        try! IdentityKeyPair(seed: ExampleKeys.seed(from: first))  // fixed 32-byte seed
    }
    let alice = ExampleKeys.aliceIdentity
    let bob = ExampleKeys.bobIdentity
    let carol = key(0x80)
    let dave = key(0xa0)
    let eve = key(0xc0)
    let mallory = key(0x60)
    var clock: UInt64 = 0
    var room = RoomID(bytes: [UInt8](repeating: 0, count: 16))!  // 16 bytes; set by create

    func create(
        by actor: IdentityKeyPair, _ members: [IdentityKeyPair], onlyAdminsAdd: Bool = false,
        nonce: RoomID? = nil
    ) throws -> RoomOperation {
        clock += 1
        let op = try RoomOperation.create(
            name: "lab", members: members.map(\.publicKey),
            policy: .init(onlyAdminsAdd: onlyAdminsAdd), by: actor, createdAt: clock,
            nonce: nonce ?? RoomID(bytes: [UInt8](repeating: UInt8(clock), count: 16))!)
        room = op.roomID
        return op
    }

    func op(_ change: RoomOperation.Change, by actor: IdentityKeyPair, after parents: RoomOperation...) throws
        -> RoomOperation
    {
        clock += 1
        return try RoomOperation.change(change, roomID: room, after: parents, by: actor, createdAt: clock)
    }

    func add(_ who: IdentityKeyPair, by actor: IdentityKeyPair, after parents: RoomOperation...) throws -> RoomOperation
    {
        clock += 1
        return try RoomOperation.change(.add(who.publicKey), roomID: room, after: parents, by: actor, createdAt: clock)
    }

    func remove(_ who: IdentityKeyPair, by actor: IdentityKeyPair, after parents: RoomOperation...) throws
        -> RoomOperation
    {
        clock += 1
        return try RoomOperation.change(
            .remove(who.publicKey), roomID: room, after: parents, by: actor, createdAt: clock)
    }

    func join(_ who: IdentityKeyPair, after parents: RoomOperation...) throws -> RoomOperation {
        clock += 1
        return try RoomOperation.change(.join, roomID: room, after: parents, by: who, createdAt: clock)
    }

    func resolve(_ root: RoomOperation, _ ops: [RoomOperation]) throws -> RoomState {
        try XCTUnwrap(RoomResolver.resolve(root: root, operations: ops))
    }

    func members(_ keys: IdentityKeyPair...) -> [IdentityPublicKey] { keys.map(\.publicKey).sorted() }

    /// A room alice owns where `others` have joined, one after the other: the root and the
    /// joins (the last join is the head).
    func joinedRoom(_ others: [IdentityKeyPair], onlyAdminsAdd: Bool = false) throws -> (RoomOperation, [RoomOperation])
    {
        let root = try create(by: alice, others, onlyAdminsAdd: onlyAdminsAdd)
        var ops: [RoomOperation] = []
        var head = root
        for k in others {
            head = try join(k, after: head)
            ops.append(head)
        }
        return (root, ops)
    }

    /// Resolves every ordering (up to 6 operations: 720) and checks they all agree.
    @discardableResult
    func assertOrderIndependent(
        _ root: RoomOperation, _ ops: [RoomOperation], file: StaticString = #filePath, line: UInt = #line
    ) throws -> RoomState {
        let reference = try resolve(root, ops)
        func permutations(_ a: [RoomOperation]) -> [[RoomOperation]] {
            guard a.count > 1 else { return [a] }
            return a.indices.flatMap { i -> [[RoomOperation]] in
                var rest = a
                let x = rest.remove(at: i)
                return permutations(rest).map { [x] + $0 }
            }
        }
        if ops.count <= 6 {
            for order in permutations(ops) {
                XCTAssertEqual(try resolve(root, order), reference, file: file, line: line)
            }
        } else {
            for _ in 0..<200 { XCTAssertEqual(try resolve(root, ops.shuffled()), reference, file: file, line: line) }
        }
        // Duplicates and the root repeated change nothing.
        XCTAssertEqual(try resolve(root, ops + ops + [root]), reference, file: file, line: line)
        return reference
    }

    // MARK: - Roles and invitations

    func testCreateMakesTheCreatorTheJoinedOwnerAndInvitesTheOthers() throws {
        let root = try create(by: alice, [bob, carol])
        let s = try resolve(root, [])
        XCTAssertEqual(s.name, "lab")
        XCTAssertEqual(s.roomID, RoomID(committingTo: root.hash))
        XCTAssertEqual(s.members, members(alice, bob, carol))
        XCTAssertEqual(s.joined, [alice.publicKey])
        XCTAssertEqual(s.role(of: alice.publicKey), .owner)
        XCTAssertEqual(s.role(of: bob.publicKey), .member)
        XCTAssertTrue(s.isInvited(bob.publicKey))
        XCTAssertEqual(s.version, 1)
        XCTAssertEqual(s.heads, [root])
        XCTAssertNil(RoomResolver.resolve(root: try add(carol, by: alice, after: root), operations: []))
    }

    func testAnInvitedMemberMustJoinBeforeActingAndOnlyMembersJoin() throws {
        let root = try create(by: alice, [bob])
        let tooEarly = try add(carol, by: bob, after: root)
        let outsider = try join(eve, after: root)
        let bobJoins = try join(bob, after: root)
        let twice = try join(bob, after: bobJoins)
        let nowAllowed = try add(carol, by: bob, after: bobJoins)
        let s = try assertOrderIndependent(root, [tooEarly, outsider, bobJoins, twice, nowAllowed])
        XCTAssertEqual(s.rejected[tooEarly.hash], .notMember)
        XCTAssertEqual(s.rejected[outsider.hash], .notMember)
        XCTAssertEqual(s.rejected[twice.hash], .noEffect)
        XCTAssertNil(s.rejected[nowAllowed.hash])
        XCTAssertEqual(s.joined, members(alice, bob))
        XCTAssertTrue(s.isInvited(carol.publicKey))
    }

    func testDecliningIsLeavingWhileInvited() throws {
        let root = try create(by: alice, [bob])
        let declines = try remove(bob, by: bob, after: root)
        let s = try resolve(root, [declines])
        XCTAssertEqual(s.members, members(alice))
    }

    func testWhoMayRemoveWhom() throws {
        let (root, joins) = try joinedRoom([bob, carol, dave])
        var head = joins.last!
        let promoteBob = try op(.setRole(bob.publicKey, .admin), by: alice, after: head)
        head = promoteBob
        let memberRemoves = try remove(dave, by: carol, after: head)  // a member: no
        let adminRemovesOwner = try remove(alice, by: bob, after: head)  // below the owner: no
        let adminRemovesMember = try remove(dave, by: bob, after: head)  // yes
        let s = try resolve(root, joins + [promoteBob, memberRemoves, adminRemovesOwner, adminRemovesMember])
        XCTAssertEqual(s.rejected[memberRemoves.hash], .notPermitted)
        XCTAssertEqual(s.rejected[adminRemovesOwner.hash], .notPermitted)
        XCTAssertNil(s.rejected[adminRemovesMember.hash])
        XCTAssertEqual(s.members, members(alice, bob, carol))
        // Admins cannot act on admins; the owner can.
        let promoteCarol = try op(.setRole(carol.publicKey, .admin), by: bob, after: adminRemovesMember)
        let adminOnAdmin = try remove(bob, by: carol, after: promoteCarol)
        let ownerOnAdmin = try remove(carol, by: alice, after: promoteCarol)
        let t = try resolve(root, joins + [promoteBob, adminRemovesMember, promoteCarol, adminOnAdmin, ownerOnAdmin])
        XCTAssertNil(t.rejected[promoteCarol.hash], "an admin may make a member admin")
        XCTAssertEqual(t.rejected[adminOnAdmin.hash], .notPermitted)
        XCTAssertNil(t.rejected[ownerOnAdmin.hash])
        XCTAssertEqual(t.members, members(alice, bob))
    }

    func testRoleChangesRenameAndPolicy() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let head = joins.last!
        let memberPromotes = try op(.setRole(carol.publicKey, .admin), by: bob, after: head)
        let memberRenames = try op(.rename("mine"), by: bob, after: head)
        let promoteBob = try op(.setRole(bob.publicKey, .admin), by: alice, after: head)
        let adminMakesOwner = try op(.setRole(carol.publicKey, .owner), by: bob, after: promoteBob)
        let adminRenames = try op(.rename("office"), by: bob, after: promoteBob)
        let sameName = try op(.rename("office"), by: alice, after: adminRenames)
        let policy = try op(.setPolicy(.init(onlyAdminsAdd: true)), by: bob, after: adminRenames)
        let memberAdds = try add(dave, by: carol, after: policy)
        let adminAdds = try add(eve, by: bob, after: policy)
        let stepsDown = try op(.setRole(bob.publicKey, .member), by: bob, after: adminAdds)
        let s = try resolve(
            root,
            joins + [
                memberPromotes, memberRenames, promoteBob, adminMakesOwner, adminRenames,
                sameName, policy, memberAdds, adminAdds, stepsDown
            ])
        XCTAssertEqual(s.rejected[memberPromotes.hash], .notPermitted)
        XCTAssertEqual(s.rejected[memberRenames.hash], .notPermitted)
        XCTAssertEqual(s.rejected[adminMakesOwner.hash], .notPermitted, "no role above one's own")
        XCTAssertEqual(s.rejected[sameName.hash], .noEffect)
        XCTAssertEqual(s.rejected[memberAdds.hash], .notPermitted, "only admins may add")
        XCTAssertNil(s.rejected[adminAdds.hash])
        XCTAssertNil(s.rejected[stepsDown.hash])
        XCTAssertEqual(s.name, "office")
        XCTAssertTrue(s.policy.onlyAdminsAdd)
        XCTAssertEqual(s.role(of: bob.publicKey), .member)
        XCTAssertEqual(s.members, members(alice, bob, carol, eve))
    }

    /// A create lists at most `maxCreateMembers`; adds (one key each) take the room past it,
    /// up to `maxMembers`, and the add after that is refused.
    func testARoomGrowsByAddsPastWhatACreateListsUpToItsCap() throws {
        XCTAssertGreaterThanOrEqual(RoomLimits.maxMembers, 1_000, "issue 30: rooms as big as an office")
        let root = try create(by: alice, (0..<RoomLimits.maxCreateMembers - 2).map { Self.key(UInt8(100 + $0)) })
        let again = try add(Self.key(100), by: alice, after: root)
        let last = try add(bob, by: alice, after: root)
        let past = try add(eve, by: alice, after: last)
        let s = try resolve(root, [again, last, past])
        XCTAssertEqual(s.rejected[again.hash], .noEffect)
        XCTAssertEqual(s.members.count, RoomLimits.maxCreateMembers + 1, "past what a create lists")
        XCTAssertTrue([root, again, last, past].allSatisfy { $0.encoded().count <= 2_247 })
        // Up to the cap (the fold, without resolving a thousand operations here).
        var fold = RoomFold()
        fold.apply(root)
        var next = past
        while fold.roles.count < RoomLimits.maxMembers {
            XCTAssertNil(RoomAuthority.check(next, in: fold))
            fold.apply(next)
            next = try add(IdentityKeyPair.generate(), by: alice, after: next)
        }
        XCTAssertEqual(RoomAuthority.check(next, in: fold), .roomFull)
    }

    func testReaddedMemberMayActAgainAfterJoining() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let out = try remove(carol, by: alice, after: joins.last!)
        let back = try add(carol, by: bob, after: out)
        let beforeJoining = try add(dave, by: carol, after: back)
        let rejoins = try join(carol, after: back)
        let acts = try add(eve, by: carol, after: rejoins)
        let s = try assertOrderIndependent(root, joins + [out, back, beforeJoining, rejoins, acts])
        XCTAssertEqual(s.rejected[beforeJoining.hash], .notMember)
        XCTAssertEqual(s.members, members(alice, bob, carol, eve))
    }

    // MARK: - Issue 14, the attacks

    /// Item 1: a removed member vetoes its removal by signing "remove the remover" with
    /// old parents, then adds keys of its own. Under the version-1 rule two concurrent
    /// removals voided each other and mallory stayed.
    func testARemovedMemberCannotVetoItsRemovalNorAddKeysOfItsOwn() throws {
        let (root, joins) = try joinedRoom([bob, mallory])
        let head = joins.last!
        let malloryJoin = joins[1]
        let out = try remove(mallory, by: alice, after: head)
        let veto = try remove(alice, by: mallory, after: malloryJoin)
        let selfPromote = try op(.setRole(mallory.publicKey, .owner), by: mallory, after: malloryJoin)
        let puppet = try add(eve, by: mallory, after: malloryJoin)
        let puppetJoins = try join(eve, after: puppet)
        let s = try assertOrderIndependent(root, joins + [out, veto, selfPromote, puppet, puppetJoins])
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.rejected[veto.hash], .notPermitted)
        XCTAssertEqual(s.rejected[selfPromote.hash], .notPermitted)
        XCTAssertEqual(s.rejected[puppet.hash], .removedConcurrently)
        XCTAssertEqual(s.rejected[puppetJoins.hash], .notMember)
        XCTAssertNil(s.rejected[out.hash], "the removal is not voided")
    }

    /// Item 1 with an admin: an admin the owner removes cannot use its old authority.
    func testARemovedAdminCannotActBehindItsRemoval() throws {
        let (root, joins) = try joinedRoom([bob, mallory])
        let promote = try op(.setRole(mallory.publicKey, .admin), by: alice, after: joins.last!)
        let out = try remove(mallory, by: alice, after: promote)
        let kicksBob = try remove(bob, by: mallory, after: promote)
        let puppet = try add(eve, by: mallory, after: promote)
        let s = try assertOrderIndependent(root, joins + [promote, out, kicksBob, puppet])
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.rejected[kicksBob.hash], .removedConcurrently)
        XCTAssertEqual(s.rejected[puppet.hash], .removedConcurrently)
    }

    /// The removal sticks even after honest members build on the back-dated operations
    /// (their node names every head it holds as a parent).
    func testBackdatedOperationsStayVoidWhenLaterOperationsFollowThem() throws {
        let (root, joins) = try joinedRoom([bob, mallory])
        let out = try remove(mallory, by: alice, after: joins.last!)
        let puppet = try add(eve, by: mallory, after: joins[1])
        let aliceAfter = try op(.rename("after"), by: alice, after: out, puppet)
        let bobAfter = try add(dave, by: bob, after: aliceAfter)
        let s = try assertOrderIndependent(root, joins + [out, puppet, aliceAfter, bobAfter])
        XCTAssertEqual(s.rejected[puppet.hash], .removedConcurrently)
        XCTAssertEqual(s.members, members(alice, bob, dave))
    }

    /// Item 2: back-dating. A member cannot remove anyone (so cannot void what others did by
    /// a removal with parents = the root); under version 1 this voided all of bob's adds.
    func testAMemberCannotBackdateARemoval() throws {
        let (root, joins) = try joinedRoom([bob, mallory])
        let bobAdds = try add(carol, by: bob, after: joins.last!)
        let backdated = try remove(bob, by: mallory, after: root)
        let s = try assertOrderIndependent(root, joins + [bobAdds, backdated])
        XCTAssertEqual(s.rejected[backdated.hash], .notMember, "not even joined at the root")
        let backdatedAfterJoin = try remove(bob, by: mallory, after: joins[1])
        let t = try resolve(root, joins + [bobAdds, backdatedAfterJoin])
        XCTAssertEqual(t.rejected[backdatedAfterJoin.hash], .notPermitted)
        XCTAssertEqual(t.members, members(alice, bob, carol, mallory))
    }

    /// Item 2 by someone who may remove: an operation the remover had seen (it is in the
    /// past of another operation of the remover's) is not voided by a back-dated removal.
    func testABackdatedRemovalCannotVoidWhatItsAuthorHadSeen() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let bobAdds = try add(dave, by: bob, after: joins.last!)
        let aliceSaw = try op(.rename("seen"), by: alice, after: bobAdds)
        let backdated = try remove(bob, by: alice, after: joins.last!)  // concurrent with bobAdds, on purpose
        let s = try assertOrderIndependent(root, joins + [bobAdds, aliceSaw, backdated])
        XCTAssertNil(s.rejected[bobAdds.hash])
        XCTAssertEqual(s.members, members(alice, carol, dave))
        // Without a sign that alice saw it, a concurrent add by the removed member is void.
        let t = try assertOrderIndependent(root, joins + [bobAdds, backdated])
        XCTAssertEqual(t.rejected[bobAdds.hash], .removedConcurrently)
    }

    /// Item 3: root squatting. The room id is the create's hash: a create that tries to
    /// claim a known id (as its nonce) founds another room, and operations on it are
    /// foreign to the real room.
    func testARoomIDCannotBeSquatted() throws {
        let real = try create(by: alice, [bob])
        let realRoom = real.roomID
        let fake = try create(by: mallory, [bob], nonce: realRoom)
        XCTAssertNotEqual(fake.roomID, realRoom)
        room = realRoom
        let claim = try add(eve, by: mallory, after: fake)  // names the real room, grows from the fake
        let s = try resolve(real, [fake, claim])
        XCTAssertEqual(s.rejected[fake.hash], .otherRoom)
        XCTAssertEqual(
            s.waiting, [claim.hash], "its parent is not part of this room: it waits forever (and a node drops it)")
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(RoomResolver.resolve(root: fake, operations: [real])?.rejected[real.hash], .otherRoom)
    }

    /// Item 4: operations with parents nobody has wait and change nothing; non-members'
    /// operations are refused.
    func testJunkWaitsOrIsRefusedAndChangesNothing() throws {
        let (root, joins) = try joinedRoom([bob])
        var junk: [RoomOperation] = []
        for i in 0..<20 {
            let phantom = try add(Self.key(UInt8(150 + i)), by: Self.key(UInt8(200 + i % 20)), after: root)
            junk.append(try add(eve, by: mallory, after: phantom))
        }
        let outsider = try add(dave, by: mallory, after: joins.last!)
        let s = try resolve(root, joins + junk + [outsider])
        XCTAssertEqual(Set(s.waiting), Set(junk.map(\.hash)))
        XCTAssertEqual(s.rejected[outsider.hash], .notMember)
        XCTAssertEqual(s.members, members(alice, bob))
        XCTAssertEqual(s.heads, [joins.last!])
    }

    // MARK: - Concurrency

    func testConcurrentHonestChangesConvergeInAnyOrder() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let promote = try op(.setRole(bob.publicKey, .admin), by: alice, after: joins.last!)
        let addDave = try add(dave, by: alice, after: promote)
        let removeCarol = try remove(carol, by: bob, after: promote)
        let rename = try op(.rename("team"), by: bob, after: promote)
        let s = try assertOrderIndependent(root, joins + [promote, addDave, removeCarol, rename])
        XCTAssertEqual(s.members, members(alice, bob, dave))
        XCTAssertEqual(s.name, "team")
        XCTAssertEqual(Set(s.heads.map(\.hash)), [addDave.hash, removeCarol.hash, rename.hash])
        let next = try RoomOperation.change(.join, roomID: room, after: s.heads, by: dave, createdAt: 99)
        XCTAssertEqual(next.sequence, promote.sequence + 2)
        XCTAssertEqual(
            try resolve(root, joins + [promote, addDave, removeCarol, rename, next]).joined,
            members(alice, bob, dave))
    }

    func testAnAddConcurrentWithARemovalOfTheSameKeyByAnEqualOrHigherRankIsOverruled() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let bobAdds = try add(dave, by: bob, after: joins.last!)
        let aliceRemoves = try remove(dave, by: alice, after: bobAdds)
        let carolAdds = try add(dave, by: carol, after: joins.last!)  // did not see either
        let s = try assertOrderIndependent(root, joins + [bobAdds, aliceRemoves, carolAdds])
        XCTAssertEqual(s.rejected[carolAdds.hash], .overruled)
        XCTAssertFalse(s.isMember(dave.publicKey))
    }

    func testLongerHistoryIsOrderIndependent() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let p = try op(.setRole(bob.publicKey, .admin), by: alice, after: joins.last!)
        let a1 = try add(dave, by: carol, after: p)
        let b1 = try remove(carol, by: bob, after: p)
        let d1 = try join(dave, after: a1)
        let d2 = try add(eve, by: dave, after: d1)
        let m = try op(.rename("x"), by: alice, after: b1, d2)
        let s = try assertOrderIndependent(root, joins + [p, a1, b1, d1, d2, m])
        // b1 (bob removes carol) is concurrent with a1 (carol adds dave): a1 is void, so dave
        // never became a member and his operations have no authority.
        XCTAssertEqual(s.rejected[a1.hash], .removedConcurrently)
        XCTAssertEqual(s.rejected[d1.hash], .notMember)
        XCTAssertEqual(s.members, members(alice, bob))
    }

    func testAFullRoomHistoryResolves() throws {
        // As many operations as a room may hold: pasts span several 64-bit words.
        let (root, joins) = try joinedRoom([bob])
        var ops = joins
        var last = joins.last!
        while ops.count < RoomLimits.maxOperationsPerRoom - 1 {
            // Bob adds dave, alice removes him again, each seeing the other.
            last =
                ops.count.isMultiple(of: 2)
                ? try remove(dave, by: alice, after: last) : try add(dave, by: bob, after: last)
            ops.append(last)
        }
        // The full replay is quadratic: it checks the first 256 (the old limit); the
        // incremental resolution, what a node runs, takes all of them, children first.
        let prefix = Array(ops.prefix(255))
        XCTAssertEqual(
            RoomResolution(root: root, operations: prefix.reversed())?.state, try resolve(root, prefix.reversed()))
        let s = try XCTUnwrap(RoomResolution(root: root, operations: ops.reversed())).state
        XCTAssertEqual(s.applied.count, RoomLimits.maxOperationsPerRoom)
        XCTAssertEqual(s.version, UInt64(RoomLimits.maxOperationsPerRoom))
        XCTAssertEqual(s.heads, [last])
    }

    // MARK: - Issue 29 (H2): only a valid lowering voids anything

    /// A demoted admin signs "remove bob" with parents from before bob's join (when it was
    /// an admin). The removal is void, and a void removal voids nothing: bob's join and
    /// everything he does later stand. Under the version-2 rule the void removal voided
    /// bob's join and every later operation of his for good (honest nodes never build on a
    /// void operation, so his were concurrent with it forever), even after the owner
    /// removed and re-added him.
    func testADemotedAdminsBackdatedRemovalLocksNobodyOut() throws {
        let root = try create(by: alice, [mallory])
        let mj = try join(mallory, after: root)
        let promote = try op(.setRole(mallory.publicKey, .admin), by: alice, after: mj)
        let addBob = try add(bob, by: alice, after: promote)
        let bobJoins = try join(bob, after: addBob)
        let demote = try op(.setRole(mallory.publicKey, .member), by: alice, after: bobJoins)
        let kick = try remove(bob, by: mallory, after: addBob)  // from before bob's join
        let bobActs = try add(carol, by: bob, after: demote)
        let s = try assertOrderIndependent(root, [mj, promote, addBob, bobJoins, demote, kick, bobActs])
        XCTAssertEqual(s.rejected[kick.hash], .removedConcurrently)
        XCTAssertNil(s.rejected[bobJoins.hash])
        XCTAssertNil(s.rejected[bobActs.hash])
        XCTAssertEqual(s.joined, members(alice, bob, mallory))
        XCTAssertEqual(s.members, members(alice, bob, carol, mallory))

        // The same with the admin removed rather than demoted, and the owner removing and
        // re-adding bob on top: bob is back in once he accepts.
        let out = try remove(mallory, by: alice, after: bobJoins)
        let bobOut = try remove(bob, by: alice, after: out)
        let bobBack = try add(bob, by: alice, after: bobOut)
        let bobAccepts = try join(bob, after: bobBack)
        let t = try assertOrderIndependent(
            root, [mj, promote, addBob, bobJoins, out, kick, bobOut, bobBack, bobAccepts])
        XCTAssertEqual(t.rejected[kick.hash], .removedConcurrently)
        XCTAssertNil(t.rejected[bobAccepts.hash])
        XCTAssertEqual(t.joined, members(alice, bob))
    }

    /// A lowering voids what its target did concurrently only if it is valid itself; an
    /// admin's removal that the owner's concurrent demotion voids leaves its target alone,
    /// also when the target's operation came first.
    func testAVoidRemovalVoidsNothingWhateverTheSequences() throws {
        let (root, joins) = try joinedRoom([bob, mallory])
        let promote = try op(.setRole(mallory.publicKey, .admin), by: alice, after: joins.last!)
        let bobAdds = try add(carol, by: bob, after: promote)
        let kick = try remove(bob, by: mallory, after: promote)
        let demote = try op(.setRole(mallory.publicKey, .member), by: alice, after: promote)
        let s = try assertOrderIndependent(root, joins + [promote, bobAdds, kick, demote])
        XCTAssertEqual(s.rejected[kick.hash], .removedConcurrently)
        XCTAssertNil(s.rejected[bobAdds.hash])
        XCTAssertEqual(s.members, members(alice, bob, carol, mallory))
    }

    /// Leaving and stepping down are lowerings too: an owner who left (or stepped down)
    /// cannot act with operations signed from before. Under the version-2 rule only a
    /// lowering by someone else voided anything, so a departed owner kept its power for
    /// good by back-dating.
    func testAnOwnerWhoLeftOrSteppedDownCannotActFromBefore() throws {
        let (root, joins) = try joinedRoom([bob, carol])
        let makeOwner = try op(.setRole(carol.publicKey, .owner), by: alice, after: joins.last!)
        let leaves = try remove(carol, by: carol, after: makeOwner)
        let kick = try remove(bob, by: carol, after: makeOwner)
        let s = try assertOrderIndependent(root, joins + [makeOwner, leaves, kick])
        XCTAssertEqual(s.rejected[kick.hash], .removedConcurrently)
        XCTAssertEqual(s.members, members(alice, bob))

        let stepsDown = try op(.setRole(carol.publicKey, .member), by: carol, after: makeOwner)
        let demotesAlice = try op(.setRole(alice.publicKey, .member), by: carol, after: makeOwner)
        let t = try assertOrderIndependent(root, joins + [makeOwner, stepsDown, kick, demotesAlice])
        XCTAssertEqual(t.rejected[kick.hash], .removedConcurrently)
        XCTAssertEqual(t.rejected[demotesAlice.hash], .notPermitted, "owners never act on owners")
        XCTAssertEqual(t.role(of: carol.publicKey), .member)
        XCTAssertEqual(t.members, members(alice, bob, carol))
    }

    /// A cycle: carol's add of bob is threatened by bob's removal of carol (bob, an admin
    /// through dave's concurrent add of him, had not seen it), which alice's removal of bob
    /// threatens, and alice's removal needs carol's add (the only add of bob alice had
    /// seen). Both "carol's add stands, so alice removes bob" and "bob removes carol, so
    /// carol's add and alice's removal are void" are self-consistent; the rule decides the
    /// lowest rank first, so the owner's removal stands. (The version-2 rule voided carol's
    /// add through the void removal, and with it alice's removal.)
    func testACycleOfThreatsIsDecidedForTheHigherRank() throws {
        let root = try create(by: alice, [carol, dave, eve])
        let cj = try join(carol, after: root)
        let dj = try join(dave, after: cj)
        let ej = try join(eve, after: dj)
        let makeOwner = try op(.setRole(eve.publicKey, .owner), by: alice, after: ej)
        let carolAdds = try add(bob, by: carol, after: makeOwner)
        let daveAdds = try add(bob, by: dave, after: makeOwner)
        let bobJoins = try join(bob, after: daveAdds)
        let promote = try op(.setRole(bob.publicKey, .admin), by: eve, after: bobJoins)
        let bobKicks = try remove(carol, by: bob, after: promote)
        let aliceKicks = try remove(bob, by: alice, after: carolAdds)
        let s = try assertOrderIndependent(
            root, [cj, dj, ej, makeOwner, carolAdds, daveAdds, bobJoins, promote, bobKicks, aliceKicks])
        XCTAssertNil(s.rejected[aliceKicks.hash])
        XCTAssertNil(s.rejected[carolAdds.hash])
        XCTAssertNotNil(s.rejected[bobKicks.hash])
        XCTAssertEqual(s.rejected[daveAdds.hash], .overruled, "alice removed bob without having seen it")
        XCTAssertEqual(s.members, members(alice, carol, dave, eve))
    }

    // MARK: - Malformed graphs

    func testMissingParentWaitsUntilItArrives() throws {
        let root = try create(by: alice, [bob])
        let a = try add(carol, by: alice, after: root)
        let b = try join(carol, after: a)
        let partial = try resolve(root, [b])
        XCTAssertEqual(partial.waiting, [b.hash])
        XCTAssertEqual(partial.members, members(alice, bob))
        XCTAssertEqual(partial.heads, [root])
        XCTAssertEqual(try resolve(root, [b, a]).joined, members(alice, carol))
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
    func hand(_ change: RoomOperation.Change, sequence: UInt64, parents: [RoomOperation], by actor: IdentityKeyPair)
        throws -> RoomOperation
    {
        guard case .add(let target) = change else { throw XCTSkip("only adds") }
        var b: [UInt8] = [2, 2] + room.bytes
        b += (0..<8).map { UInt8(truncatingIfNeeded: sequence >> UInt64(56 - 8 * $0)) }
        b += [UInt8](repeating: 0, count: 8)
        b += actor.publicKey.bytes
        let hashes = parents.map(\.hash).sorted()
        b.append(UInt8(hashes.count))
        for h in hashes { b += h.bytes }
        b += target.bytes
        return try RoomOperation.decode(b + actor.sign(Array("parley-room-op-v2\0".utf8) + b))
    }
}
