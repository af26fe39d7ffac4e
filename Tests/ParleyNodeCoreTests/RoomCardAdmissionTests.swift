import ParleyCore
import ParleyNodeCore
import XCTest

/// Room cards (issue 30): a co-member's card passed on through a room names a key the room
/// already made a member, never changes a known peer, and comes only from and to members.
final class RoomCardAdmissionTests: XCTestCase {
    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let carol = IdentityKeyPair.generate()
    let dave = IdentityKeyPair.generate()

    func change(_ c: RoomOperation.Change, by k: IdentityKeyPair, after ops: [RoomOperation]) throws -> RoomOperation {
        let state = RoomResolver.resolve(root: ops[0], operations: ops)!
        return try RoomOperation.change(c, roomID: ops[0].roomID, after: state.heads, by: k, createdAt: 2)
    }

    /// #lab: alice creates it with bob, carol and dave; bob and carol join (dave does not yet).
    func lab() throws -> [RoomOperation] {
        var ops = [
            try RoomOperation.create(
                name: "lab", members: [bob.publicKey, carol.publicKey, dave.publicKey], by: alice, createdAt: 1)
        ]
        ops.append(try change(.join, by: bob, after: ops))
        ops.append(try change(.join, by: carol, after: ops))
        return ops
    }

    func judge(
        _ subject: IdentityKeyPair, _ ops: [RoomOperation], me: IdentityKeyPair? = nil, from: IdentityKeyPair? = nil,
        known: Bool = false
    )
        -> RoomCardAdmission.Verdict
    {
        RoomCardAdmission.judge(
            subject: subject.publicKey, room: RoomResolver.resolve(root: ops[0], operations: ops),
            me: (me ?? bob).publicKey, sender: (from ?? alice).publicKey, known: known)
    }

    func testAJoinedCoMembersCardFromAMemberIsLearnt() throws {
        XCTAssertEqual(judge(carol, try lab()), .learn)
    }

    func testAKnownPeerIsNeverChangedByARoomCard() throws {
        XCTAssertEqual(judge(carol, try lab(), known: true), .refuse(.alreadyKnown))
        XCTAssertEqual(judge(bob, try lab()), .refuse(.ownKey))
    }

    /// A stranger's card, or that of an invitee who has not joined, is not taken now: it is
    /// held until the room makes its subject a joined member, which for a stranger never comes.
    func testAStrangersOrAnInviteesCardIsHeldNotLearnt() throws {
        XCTAssertEqual(judge(IdentityKeyPair.generate(), try lab()), .hold)
        XCTAssertEqual(judge(dave, try lab()), .hold)
    }

    /// Only between members, only while both are members: a removed member's card is not
    /// learnt after its removal, nothing a removed member (or a stranger) passes on is, and a
    /// node that left learns nothing.
    func testOnlyMembersPassCardsOnAndOnlyToMembers() throws {
        var ops = try lab()
        XCTAssertEqual(judge(carol, ops, from: IdentityKeyPair.generate()), .refuse(.senderNotMember))
        XCTAssertEqual(judge(carol, ops, from: dave), .refuse(.senderNotMember), "an invitee passes nothing on")
        XCTAssertEqual(judge(carol, ops, me: dave), .hold, "invited: held until it joins")
        XCTAssertEqual(judge(carol, ops, me: IdentityKeyPair.generate()), .refuse(.notForUs))
        ops.append(try change(.remove(carol.publicKey), by: alice, after: ops))
        XCTAssertEqual(judge(carol, ops), .hold, "removed: not a member, never learnt unless added again")
        XCTAssertEqual(judge(alice, ops, from: carol), .refuse(.senderNotMember))
        XCTAssertEqual(judge(carol, ops, me: carol), .refuse(.notForUs))
        XCTAssertEqual(
            RoomCardAdmission.judge(
                subject: carol.publicKey, room: nil, me: bob.publicKey, sender: alice.publicKey, known: false),
            .refuse(.notForUs))
    }
}
