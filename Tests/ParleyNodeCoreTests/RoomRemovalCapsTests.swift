import ParleyCore
import ParleyNodeCore
import XCTest

/// Removal caps (features bit 7; docs/PROTOCOL.md "Removal caps"): a remove names the
/// removed author's last accepted `roomSequence`, and a message of that author above it is
/// refused unless the removal is in the message's past (written after a re-add). Pure: the
/// rule on resolved rooms, in several arrival orders.
final class RoomRemovalCapsTests: XCTestCase {
    let alice = IdentityKeyPair.generate()  // owner
    let bob = IdentityKeyPair.generate()  // admin
    let carol = IdentityKeyPair.generate()
    let eve = IdentityKeyPair.generate()

    func resolve(_ ops: [RoomOperation]) -> RoomState { RoomResolver.resolve(root: ops[0], operations: ops)! }

    func change(
        _ c: RoomOperation.Change, by who: IdentityKeyPair, after ops: [RoomOperation], cap: UInt64? = nil
    ) throws -> RoomOperation {
        try RoomOperation.change(
            c, roomID: ops[0].roomID, after: resolve(ops).heads, by: who, createdAt: 2, removalCap: cap)
    }

    func index(_ ops: [RoomOperation]) -> [RoomOperationHash: RoomOperation] {
        Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) })
    }

    /// #lab: alice creates with bob, carol and eve; all join; bob is made an admin.
    func lab() throws -> [RoomOperation] {
        var ops = [
            try RoomOperation.create(
                name: "lab", members: [bob.publicKey, carol.publicKey, eve.publicKey], by: alice, createdAt: 1)
        ]
        for m in [bob, carol, eve] { ops.append(try change(.join, by: m, after: ops)) }
        ops.append(try change(.setRole(bob.publicKey, .admin), by: alice, after: ops))
        return ops
    }

    func verdict(
        _ author: IdentityKeyPair, _ sequence: UInt64, at anchor: [RoomOperationHash], for member: IdentityKeyPair,
        _ ops: [RoomOperation]
    ) -> RoomEntitlement.Verdict {
        let state = resolve(ops)
        return RoomEntitlement.verdict(
            author: author.publicKey, sequence: sequence,
            place: RoomEntitlement.place(at: anchor, state: state, operations: index(ops)), for: member.publicKey,
            state: state)
    }

    // MARK: The rule

    /// Eve's messages 1 ... 3 were accepted when alice removed her (cap 3). Anchored before
    /// the removal, 1 ... 3 stand (one that reaches a member late is still taken); 4 is a
    /// write after the removal, back-dated: refused for every member.
    func testABackDatedMessageAboveTheCapIsRefusedAndOneBelowStands() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        ops.append(try change(.remove(eve.publicKey), by: alice, after: ops, cap: 3))
        for s: UInt64 in [1, 2, 3] {
            XCTAssertEqual(verdict(eve, s, at: before, for: carol, ops), .entitled, "message \(s) was sent before")
        }
        XCTAssertEqual(verdict(eve, 4, at: before, for: carol, ops), .beyondRemovalCap)
        XCTAssertEqual(verdict(eve, 4, at: before, for: bob, ops), .beyondRemovalCap, "for every member")
        XCTAssertEqual(verdict(carol, 4, at: before, for: bob, ops), .entitled, "a cap binds its target only")
        // Anchored after the removal: not a member there, as before caps.
        XCTAssertEqual(
            verdict(eve, 2, at: resolve(ops).heads.map(\.hash), for: carol, ops), .authorNotMember)
    }

    /// A remove from a node without bit 7 (or from a store from before the field) has no
    /// cap: the behaviour before caps, the back-dated message is taken.
    func testAnUncappedRemovalLimitsNothing() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        ops.append(try change(.remove(eve.publicKey), by: alice, after: ops))
        XCTAssertNil(ops.last?.removalCap)
        XCTAssertEqual(verdict(eve, 99, at: before, for: carol, ops), .entitled)
    }

    /// Re-added after her removal (cap 3), eve's sequences go on above the cap: what she
    /// writes on the heads after her new join has the removal in its past, so the cap does
    /// not apply; a message anchored before the removal is still refused above it. A
    /// second removal caps again, and then the lowest cap not in a message's past binds.
    func testAReAddedMembersNewMessagesPassTheCap() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        ops.append(try change(.remove(eve.publicKey), by: alice, after: ops, cap: 3))
        ops.append(try change(.add(eve.publicKey), by: alice, after: ops))
        ops.append(try change(.join, by: eve, after: ops))
        let readded = resolve(ops).heads.map(\.hash)
        XCTAssertTrue(resolve(ops).hasJoined(eve.publicKey))
        XCTAssertEqual(verdict(eve, 4, at: readded, for: carol, ops), .entitled, "written after the re-add")
        XCTAssertEqual(verdict(eve, 9, at: readded, for: carol, ops), .entitled)
        XCTAssertEqual(verdict(eve, 4, at: before, for: carol, ops), .beyondRemovalCap, "still back-dated")
        ops.append(try change(.remove(eve.publicKey), by: alice, after: ops, cap: 7))
        XCTAssertEqual(verdict(eve, 7, at: readded, for: carol, ops), .entitled)
        XCTAssertEqual(verdict(eve, 8, at: readded, for: carol, ops), .beyondRemovalCap, "the second cap")
        XCTAssertEqual(verdict(eve, 4, at: before, for: carol, ops), .beyondRemovalCap, "both caps: the lower")
    }

    /// Alice (owner) and bob (admin) remove eve at once, on the same heads, with
    /// different caps (bob had received fewer of her messages). Whatever order a member
    /// takes the operations in, the same caps hold: the lower one binds a message anchored
    /// before both.
    func testConcurrentRemovalsConvergeOnTheLowerCap() throws {
        let ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        let byAlice = try change(.remove(eve.publicKey), by: alice, after: ops, cap: 5)
        let byBob = try change(.remove(eve.publicKey), by: bob, after: ops, cap: 2)
        var verdicts: Set<[RoomEntitlement.Verdict]> = []
        for order in [[byAlice, byBob], [byBob, byAlice]] {
            var resolution = RoomResolution(root: ops[0], operations: ops)!
            for op in order { resolution.insert(op) }
            let all = ops + order
            let state = resolution.state
            XCTAssertTrue(state.applied.contains(byAlice.hash) && state.applied.contains(byBob.hash))
            let place = RoomEntitlement.place(at: before, state: state, operations: index(all))
            XCTAssertEqual(place?.caps[eve.publicKey], 2)
            verdicts.insert(
                (1...6).map {
                    RoomEntitlement.verdict(
                        author: eve.publicKey, sequence: $0, place: place, for: carol.publicKey, state: state)
                })
        }
        XCTAssertEqual(
            verdicts,
            [[.entitled, .entitled, .beyondRemovalCap, .beyondRemovalCap, .beyondRemovalCap, .beyondRemovalCap]])
    }

    /// A leave caps too (the leaver names its own last message): a member who left cannot
    /// go on writing with an old anchor.
    func testALeaveCapsTheLeaver() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        ops.append(try change(.remove(carol.publicKey), by: carol, after: ops, cap: 1))
        XCTAssertEqual(verdict(carol, 1, at: before, for: bob, ops), .entitled)
        XCTAssertEqual(verdict(carol, 2, at: before, for: bob, ops), .beyondRemovalCap)
    }

    /// A void remove caps nothing: only valid operations count. A member (not an admin)
    /// "removing" eve with a cap of 0 is not permitted.
    func testAVoidRemovalCapsNothing() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        ops.append(try change(.remove(eve.publicKey), by: carol, after: ops, cap: 0))
        XCTAssertNotNil(resolve(ops).rejected[ops.last!.hash])
        XCTAssertEqual(verdict(eve, 1, at: before, for: bob, ops), .entitled)
    }

    /// The cap a node signs: the highest held, holes or not; none unless every member reads caps.
    func testTheCapToSign() {
        XCTAssertEqual(RoomRemovalCaps.capToSign(highestHeld: 7, everyoneReadsCaps: true), 7)
        XCTAssertNil(RoomRemovalCaps.capToSign(highestHeld: 7, everyoneReadsCaps: false))
    }
}
