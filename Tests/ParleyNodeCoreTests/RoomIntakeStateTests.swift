import ParleyCore
import ParleyNodeCore
import XCTest

/// The room driver's pure parts (issue 32): operations waiting for a parent
/// (`WaitingRoomOperations`), messages held until their author is a member
/// (`HeldRoomChats`) and the inputs of `RoomAdmission` (`RoomIntake`).
final class RoomIntakeStateTests: XCTestCase {
    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let mallory = IdentityKeyPair.generate()
    let t0 = MonotonicInstant(nanoseconds: 1_000_000_000)

    private func chain(_ n: Int) throws -> [RoomOperation] {
        var ops = [try RoomOperation.create(name: "lab", members: [bob.publicKey], by: alice, createdAt: 1)]
        for i in 0..<n {
            ops.append(
                try RoomOperation.change(
                    .rename("r\(i)"), roomID: ops[0].roomID, after: [ops.last!], by: alice, createdAt: UInt64(2 + i)))
        }
        return ops
    }

    /// Per peer: bounded, a duplicate held once, the oldest dropped after the timeout
    /// whoever holds next; taken per peer in the resolver's order once their parents are held.
    func testWaitingOperationsAreBoundedExpireAndAreTakenWhenReady() throws {
        let ops = try chain(4)
        var waiting = WaitingRoomOperations(maxPerPeer: 2, timeout: .seconds(10))
        XCTAssertEqual(waiting.hold(ops[3], from: mallory.publicKey, now: t0), .held)
        XCTAssertEqual(waiting.hold(ops[3], from: mallory.publicKey, now: t0), .alreadyWaiting)
        XCTAssertEqual(waiting.hold(ops[2], from: mallory.publicKey, now: t0), .held)
        XCTAssertEqual(waiting.hold(ops[4], from: mallory.publicKey, now: t0), .overLimit(limit: 2))
        XCTAssertEqual(waiting.hold(ops[2], from: bob.publicKey, now: t0 + .seconds(5)), .held)
        XCTAssertEqual(waiting.others(of: ops[0].roomID, from: mallory.publicKey, except: ops[3].hash), [ops[2]])

        // Only ops[2]'s parent (ops[1]) is held: ops[3] waits on.
        let held = Dictionary(uniqueKeysWithValues: ops[0...1].map { ($0.hash, $0) })
        let taken = waiting.takeReady(room: ops[0].roomID, held: held)
        XCTAssertEqual(Set(taken.map(\.peer)), [mallory.publicKey, bob.publicKey])
        XCTAssertTrue(taken.allSatisfy { $0.operations == [ops[2]] })
        XCTAssertEqual(waiting.total, 1)

        // mallory's last one times out when bob holds something ten seconds later.
        XCTAssertEqual(waiting.hold(ops[4], from: bob.publicKey, now: t0 + .seconds(10)), .held)
        XCTAssertEqual(waiting.count(from: mallory.publicKey), 0)
        XCTAssertEqual(waiting.total, 1)
        // An unknown room: everything of it may move.
        XCTAssertEqual(waiting.takeReady(room: ops[0].roomID, held: nil).map(\.operations), [[ops[4]]])
    }

    /// A LAN attacker's keys cost a handshake each, and what a key sent waits after its
    /// session ends: keys made up one after the other, each sending a whole log of junk
    /// (4,097 operations, 9 MiB), must not grow memory with the number of keys. The total
    /// stays within four shares, and a peer that arrives afterwards still gets its share.
    func testManyKeysTogetherCannotHoldMoreThanTheTotal() throws {
        // 40 keys of 500 each: more than the total, in less time than whole logs take.
        let ops = try chain(500)
        var waiting = WaitingRoomOperations()
        var t = t0
        for _ in 0..<40 {
            let key = IdentityKeyPair.generate().publicKey
            for op in ops { _ = waiting.hold(op, from: key, now: t) }
            t = t + .seconds(1)
        }
        let bound = 4 * RoomAdmission.maxWaitingPerSender
        XCTAssertLessThanOrEqual(waiting.total, bound, "every key's share held: memory grows with the keys")
        // An honest newcomer's log of 300 operations still waits whole (the 40 shares are
        // about 410 each now).
        let honest = bob.publicKey
        for op in ops.prefix(300) {
            let outcome = waiting.hold(op, from: honest, now: t)
            XCTAssertTrue(outcome == .held || { if case .heldDisplacing = outcome { return true } else { return false } }())
        }
        XCTAssertEqual(waiting.count(from: honest), 300)
        XCTAssertLessThanOrEqual(waiting.total, bound)
    }

    /// When the total is full, a hold displaces the oldest of the peer with the most
    /// waiting, never one with fewer than the holder would have: shares even out, and a
    /// peer with its equal share is refused instead of displacing.
    func testAFullTotalDisplacesTheLargestShareOnly() throws {
        let ops = try chain(8)
        var waiting = WaitingRoomOperations(maxPerPeer: 6, maxInAll: 6, timeout: .seconds(10))
        for op in ops[1...6] { XCTAssertEqual(waiting.hold(op, from: mallory.publicKey, now: t0), .held) }
        XCTAssertEqual(waiting.hold(ops[1], from: bob.publicKey, now: t0), .heldDisplacing(mallory.publicKey))
        XCTAssertEqual(waiting.hold(ops[2], from: bob.publicKey, now: t0), .heldDisplacing(mallory.publicKey))
        XCTAssertEqual(waiting.hold(ops[3], from: bob.publicKey, now: t0), .heldDisplacing(mallory.publicKey))
        XCTAssertEqual(waiting.count(from: mallory.publicKey), 3)
        XCTAssertEqual(waiting.hold(ops[4], from: bob.publicKey, now: t0), .overTotal(limit: 6), "equal shares")
        XCTAssertEqual(waiting.hold(ops[7], from: mallory.publicKey, now: t0), .overTotal(limit: 6))
        XCTAssertEqual(waiting.total, 6)
        // mallory's oldest went first: ops[1...3] are gone, ops[4...6] wait.
        XCTAssertEqual(
            Set(waiting.others(of: ops[0].roomID, from: mallory.publicKey, except: ops[0].hash).map(\.hash)),
            Set(ops[4...6].map(\.hash)))
        // Taking and expiring keep the count.
        _ = waiting.takeReady(room: ops[0].roomID, held: nil)
        XCTAssertEqual(waiting.total, 0)
        XCTAssertEqual(waiting.hold(ops[1], from: alice.publicKey, now: t0), .held)
        waiting.expire(now: t0 + .seconds(10))
        XCTAssertEqual(waiting.total, 0)
    }

    /// Held per author within the count, the author's bytes and the total; released per
    /// room when the author may move; dropped with the author's session.
    func testHeldChatsAreBoundedReleasedAndDropped() {
        let room = RoomID.random()
        let other = RoomID.random()
        var held = HeldRoomChats(limits: .init(perAuthor: 3, bytesPerAuthor: 10, bytes: 14))
        func chat(_ body: String, _ r: RoomID) -> RoomChatRecord {
            RoomChatRecord(id: .random(), roomID: r, sequence: 1, createdAt: 1, body: body)
        }
        let a1 = chat("aaaa", room)
        XCTAssertEqual(held.hold([a1, a1, chat("bbbb", other), chat("cccc", room)], from: bob.publicKey), 2)
        XCTAssertEqual(held.totalBytes, 8, "a1 once; the third would pass bob's 10 bytes")
        XCTAssertEqual(held.hold([chat("dddddd", room), chat("ee", room)], from: mallory.publicKey), 1)
        XCTAssertEqual(held.totalBytes, 14)
        XCTAssertEqual(held.hold([chat("f", room)], from: alice.publicKey), 0, "the total is full")

        XCTAssertTrue(held.release(room: room) { $0 != bob.publicKey }.map(\.author) == [mallory.publicKey])
        XCTAssertEqual(held.totalBytes, 8)
        let bobs = held.release(room: room) { _ in true }
        XCTAssertEqual(bobs.first?.chats.map(\.id), [a1.id])
        XCTAssertEqual(held.held(from: bob.publicKey).map(\.roomID), [other])
        held.drop(author: bob.publicKey)
        XCTAssertEqual(held.totalBytes, 0)
        XCTAssertTrue(held.authors.isEmpty)
    }

    /// The invitation root only once something names this node; a stranger's key named is
    /// not an invitation.
    func testAnUnknownRoomIsResolvedOnlyOnceItNamesThisNode() throws {
        let root = try RoomOperation.create(name: "x", members: [bob.publicKey], by: mallory, createdAt: 1)
        let addAlice = try RoomOperation.change(
            .add(alice.publicKey), roomID: root.roomID, after: [root], by: mallory, createdAt: 2)
        XCTAssertNil(RoomIntake.invitationRoot(of: [root], me: alice.publicKey))
        XCTAssertNil(RoomIntake.invitationRoot(of: [addAlice], me: alice.publicKey), "no create yet")
        XCTAssertEqual(RoomIntake.invitationRoot(of: [addAlice, root], me: alice.publicKey), root)
        XCTAssertEqual(RoomIntake.unapplied(by: mallory.publicKey, among: [root, addAlice], before: nil), 0)
    }

    /// An unknown room's log is resolved when it first names this node and each time it
    /// doubles; what arrives in between is resolved on the tick once the sender is quiet,
    /// at most once per `flushSpacing`; a log that never named this node is not paced.
    func testAnUnknownRoomsLogIsResolvedWhenItDoublesAndWhenItsSenderIsQuiet() throws {
        typealias Pacing = UnknownRoomResolutionPacing
        var pacing = Pacing()
        let key = Pacing.Key(peer: mallory.publicKey, room: try chain(0)[0].roomID)
        XCTAssertFalse(pacing.arrived(key, size: 1, namesMe: false, now: t0))
        XCTAssertTrue(pacing.keys.isEmpty, "a log that names nobody here is not paced")
        var resolvedAt: [Int] = []
        for size in 2...100 where pacing.arrived(key, size: size, namesMe: true, now: t0) {
            pacing.resolved(key, size: size)
            resolvedAt.append(size)
        }
        XCTAssertEqual(resolvedAt, [2, 4, 8, 16, 32, 64])
        XCTAssertEqual(pacing.resolutions, 6)

        XCTAssertEqual(pacing.due(now: t0 + .seconds(1)), [], "the sender is not quiet yet")
        XCTAssertEqual(pacing.due(now: t0 + Pacing.quietInterval), [key], "grew (100 > 64) and quiet")
        pacing.resolved(key, size: 100)
        XCTAssertEqual(pacing.due(now: t0 + .seconds(60)), [], "nothing new since")

        // A sender dripping one operation per quiet interval: one flush per `flushSpacing`.
        var flushes = 0
        var now = t0 + Pacing.quietInterval
        for size in 101...130 {
            now = now + Pacing.quietInterval
            _ = pacing.arrived(key, size: size, namesMe: true, now: now)
            now = now + Pacing.quietInterval
            for k in pacing.due(now: now) {
                pacing.resolved(k, size: size)
                flushes += 1
            }
        }
        let elapsed = Double((now - (t0 + Pacing.quietInterval)).wholeNanoseconds) / 1e9
        let spacing = Double(Pacing.flushSpacing.wholeNanoseconds) / 1e9
        XCTAssertLessThanOrEqual(flushes, Int(elapsed / spacing) + 1)
        XCTAssertGreaterThan(flushes, 0)
        pacing.forget(key)
        XCTAssertTrue(pacing.keys.isEmpty)
    }
}
