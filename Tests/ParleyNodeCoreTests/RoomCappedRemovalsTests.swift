import ParleyCore
import ParleyNodeCore
import XCTest

/// Which held messages are marked as written after their author's removal
/// (`RoomCappedRemovals`; docs/PROTOCOL.md "What a member already took"): the rule that
/// refuses a message on arrival, applied at read time to the room as resolved now, so a
/// mark goes when its remove turns void.
final class RoomCappedRemovalsTests: XCTestCase {
    let alice = IdentityKeyPair.generate()  // owner
    let bob = IdentityKeyPair.generate()
    let carol = IdentityKeyPair.generate()
    let eve = IdentityKeyPair.generate()  // an admin, removed in the last test

    func resolve(_ ops: [RoomOperation]) -> RoomState { RoomResolver.resolve(root: ops[0], operations: ops)! }

    func index(_ ops: [RoomOperation]) -> [RoomOperationHash: RoomOperation] {
        Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) })
    }

    func change(
        _ c: RoomOperation.Change, by who: IdentityKeyPair, after ops: [RoomOperation], cap: UInt64? = nil
    ) throws -> RoomOperation {
        try RoomOperation.change(
            c, roomID: ops[0].roomID, after: resolve(ops).heads, by: who, createdAt: 2, removalCap: cap)
    }

    /// #lab: alice creates with bob, carol and eve; all join; eve is made an admin.
    func lab() throws -> [RoomOperation] {
        var ops = [
            try RoomOperation.create(
                name: "lab", members: [bob, carol, eve].map(\.publicKey), by: alice, createdAt: 1)
        ]
        for m in [bob, carol, eve] { ops.append(try change(.join, by: m, after: ops)) }
        ops.append(try change(.setRole(eve.publicKey, .admin), by: alice, after: ops))
        return ops
    }

    func caps(_ ops: [RoomOperation]) -> RoomCappedRemovals {
        RoomCappedRemovals(state: resolve(ops), operations: index(ops))
    }

    func marked(
        _ author: IdentityKeyPair, _ sequence: UInt64, at anchor: [RoomOperationHash], _ ops: [RoomOperation]
    ) -> Bool {
        caps(ops).isAfterRemoval(
            author: author.publicKey, sequence: sequence,
            past: RoomEntitlement.past(of: anchor, operations: index(ops)))
    }

    /// Carol removed with cap 2: her 3, anchored before the removal, is marked; 1 and 2 are
    /// not (sent before), and her messages after a re-add are not (the removal in their past).
    func testAMessageAboveTheCapAnchoredBeforeTheRemovalIsMarked() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        XCTAssertTrue(caps(ops).isEmpty)
        XCTAssertFalse(marked(carol, 3, at: before, ops), "no removal yet: nothing marked")
        ops.append(try change(.remove(carol.publicKey), by: alice, after: ops, cap: 2))
        XCTAssertEqual(caps(ops).floor(of: carol.publicKey), 2)
        XCTAssertFalse(caps(ops).mayMark(author: carol.publicKey, sequence: 2), "at the cap: no anchor read")
        XCTAssertTrue(caps(ops).mayMark(author: carol.publicKey, sequence: 3))
        XCTAssertFalse(caps(ops).mayMark(author: bob.publicKey, sequence: 99), "bob has no cap")
        for s: UInt64 in [1, 2] { XCTAssertFalse(marked(carol, s, at: before, ops)) }
        XCTAssertTrue(marked(carol, 3, at: before, ops), "written after the removal, back-dated")
        XCTAssertTrue(marked(carol, 3, at: before, ops) == !verdictAdmits(carol, 3, at: before, ops), "as on arrival")
        ops.append(try change(.add(carol.publicKey), by: alice, after: ops))
        ops.append(try change(.join, by: carol, after: ops))
        XCTAssertFalse(marked(carol, 4, at: resolve(ops).heads.map(\.hash), ops), "after the re-add: stands")
        XCTAssertTrue(marked(carol, 3, at: before, ops), "still marked: anchored before the removal")
        XCTAssertFalse(
            caps(ops).isAfterRemoval(author: carol.publicKey, sequence: 3, past: nil), "no anchor: nothing marked")
    }

    /// Two removals outside the message's past: the lowest cap binds.
    func testTheLowestCapBinds() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        let byAlice = try change(.remove(carol.publicKey), by: alice, after: ops, cap: 5)
        let byEve = try change(.remove(carol.publicKey), by: eve, after: ops, cap: 3)
        ops += [byAlice, byEve]
        XCTAssertEqual(caps(ops).floor(of: carol.publicKey), 3)
        XCTAssertTrue(marked(carol, 4, at: before, ops))
        XCTAssertFalse(marked(carol, 3, at: before, ops))
        // Anchored after alice's removal only (eve's concurrent one not in its past): eve's binds.
        XCTAssertTrue(marked(carol, 4, at: [byAlice.hash], ops))
    }

    /// An uncapped remove marks nothing (the behaviour before caps).
    func testAnUncappedRemoveMarksNothing() throws {
        var ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        ops.append(try change(.remove(carol.publicKey), by: alice, after: ops))
        XCTAssertTrue(caps(ops).isEmpty)
        XCTAssertFalse(marked(carol, 99, at: before, ops))
    }

    /// The reversible case: eve (an admin) is removed by alice (D); eve signs a capped
    /// remove of carol parented before D. A member holding eve's remove but not D marks
    /// carol's 3; once D arrives, eve's remove is void and the mark is gone, with nothing
    /// else to do: the marks are derived from the valid removes again.
    func testAMarkGoesWhenItsRemoveTurnsVoid() throws {
        let ops = try lab()
        let before = resolve(ops).heads.map(\.hash)
        let d = try change(.remove(eve.publicKey), by: alice, after: ops)
        let forged = try change(.remove(carol.publicKey), by: eve, after: ops, cap: 2)
        let lagging = ops + [forged]
        XCTAssertTrue(marked(carol, 3, at: before, lagging), "valid for now at the lagging member")
        let complete = ops + [forged, d]
        XCTAssertTrue(resolve(complete).hasJoined(carol.publicKey), "eve's remove is void")
        XCTAssertTrue(caps(complete).isEmpty)
        XCTAssertFalse(marked(carol, 3, at: before, complete), "the mark goes by itself")
        XCTAssertEqual(caps(complete).authorsChanged(from: caps(lagging)), [carol.publicKey])
        XCTAssertEqual(caps(complete).floor(of: carol.publicKey, orIn: caps(lagging)), 2)
        XCTAssertEqual(caps(lagging).authorsChanged(from: caps(lagging)), [])
    }

    private func verdictAdmits(
        _ author: IdentityKeyPair, _ sequence: UInt64, at anchor: [RoomOperationHash], _ ops: [RoomOperation]
    ) -> Bool {
        let state = resolve(ops)
        return RoomEntitlement.verdict(
            author: author.publicKey, sequence: sequence,
            place: RoomEntitlement.place(at: anchor, state: state, operations: index(ops)), for: bob.publicKey,
            state: state) != .beyondRemovalCap
    }
}
