import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// `AfterRemovalMarks` on its own, given what the node gives it: a real store (the messages
/// taken through room sync, as a member takes them), the room's entry as resolved, and an
/// emit that records. Alice (owner) removes eve with cap 1 after this node took eve's 1, 2
/// and her reaction (sequence 3) on alice's message. The whole node's path (the driver tells
/// the host, the view reads the mark) is `RoomRemovalCapTests`.
final class AfterRemovalMarksTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!

    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let eve = IdentityKeyPair.generate()

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-marks")
    }

    override func tearDownWithError() throws {
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func resolve(_ ops: [RoomOperation]) -> RoomState { RoomResolver.resolve(root: ops[0], operations: ops)! }

    private func entry(_ ops: [RoomOperation]) -> RoomBook.Entry {
        var e = RoomBook.Entry()
        e.root = ops[0]
        e.operations = Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) })
        e.state = resolve(ops)
        return e
    }

    func testMarksFollowTheCappedRemovesOfTheEntryAndEachChangeIsTold() throws {
        var ops = [
            try RoomOperation.create(name: "lab", members: [bob, eve].map(\.publicKey), by: alice, createdAt: 1)
        ]
        for m in [bob, eve] {
            ops.append(
                try RoomOperation.change(.join, roomID: ops[0].roomID, after: resolve(ops).heads, by: m, createdAt: 2))
        }
        let room = ops[0].roomID
        let removal = try RoomOperation.change(
            .remove(eve.publicKey), roomID: room, after: resolve(ops).heads, by: alice, createdAt: 3, removalCap: 1)

        // Bob's node takes alice's 1, eve's 1 and 2 and eve's reaction, before the removal.
        let store = try Store(directory: directory)
        let host = SyncHost()
        let sync = RoomSyncDriver<SyncHost>(
            store: store, identity: bob, clock: clock, log: testLogger(),
            attackLog: RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60)))
        sync.host = host
        let state = resolve(ops)
        host.rooms[room] = (state, Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) }))
        try store.saveRoom(
            RoomRecord(
                id: room, root: state.root, name: state.name, creator: state.creator,
                createdAt: Int64(state.createdAt), version: Int64(state.version), members: state.members,
                status: .joined, roles: state.roles, joined: state.joined, updatedAt: 1))
        let anchor = state.heads.map(\.hash)
        func signed(_ body: String, by author: IdentityKeyPair, sequence: UInt64) throws -> SignedRoomMessage {
            try SignedRoomMessage.sign(
                roomID: room, roomSequence: sequence, id: .random(), createdAt: 1, anchor: anchor, body: body,
                by: author)
        }
        let alices = try signed("alice 1", by: alice, sequence: 1)
        let reaction = try SignedRoomMessage.signChange(
            .reaction(try Reaction("👍"), added: true), of: alices.id, roomID: room, roomSequence: 3, id: .random(),
            createdAt: 3, anchor: anchor, by: eve)
        for (m, author) in [
            (alices, alice), (try signed("eve 1", by: eve, sequence: 1), eve),
            (try signed("eve 2", by: eve, sequence: 2), eve), (reaction, eve)
        ] {
            let link = host.links[author.publicKey] ?? host.connect(author.publicKey)
            _ = try sync.receivedSignedMessages([.verified(m)], from: author.publicKey, on: link)
        }
        let held = Dictionary(
            uniqueKeysWithValues: try store.roomMessages(room: room, after: nil, limit: 50).map { ($0.body, $0) })
        XCTAssertEqual(Set(held.keys), ["alice 1", "eve 1", "eve 2"])
        let eve1 = try XCTUnwrap(held["eve 1"])
        let eve2 = try XCTUnwrap(held["eve 2"])

        let before = entry(ops)
        let after = entry(ops + [removal])
        XCTAssertTrue(before.cappedRemovals.isEmpty)
        XCTAssertFalse(after.cappedRemovals.isEmpty, "alice's capped remove of eve is valid")
        var current = before
        var told: [String] = []
        let marks = AfterRemovalMarks(
            store: store, roomEntry: { _ in current },
            emit: { if case .messageUpdated(let m) = $0 { told.append(m.body) } }, log: testLogger())

        // No capped remove: nothing marked, nothing left out of unread.
        XCTAssertFalse(marks.isAfterRemoval(eve2, in: before))
        XCTAssertFalse(marks.isReactionAfterRemoval(room: room, reactor: eve.publicKey, sequence: 3))
        XCTAssertEqual(marks.unread(in: room), 0)

        // The remove (cap 1) is in the entry: above the cap is marked, at the cap is not.
        current = after
        XCTAssertFalse(marks.isAfterRemoval(eve1, in: after), "at the cap: part of the history")
        XCTAssertTrue(marks.isAfterRemoval(eve2, in: after), "taken before the removal arrived")
        XCTAssertFalse(marks.isAfterRemoval(try XCTUnwrap(held["alice 1"]), in: after), "not the removed author")
        XCTAssertTrue(marks.isReactionAfterRemoval(room: room, reactor: eve.publicKey, sequence: 3))
        XCTAssertEqual(marks.unread(in: room), 1, "eve 2 is left out of unread")

        // Each change of the capped removes tells the messages whose view changed, both ways.
        marks.cappedRemovalsChanged(room, from: before.cappedRemovals, to: after.cappedRemovals)
        XCTAssertEqual(told.sorted(), ["alice 1", "eve 2"], "eve 2's mark, alice 1's reaction")
        told = []
        current = before
        marks.cappedRemovalsChanged(room, from: after.cappedRemovals, to: before.cappedRemovals)
        XCTAssertEqual(told.sorted(), ["alice 1", "eve 2"])
        XCTAssertEqual(marks.unread(in: room), 0)
        told = []
        marks.cappedRemovalsChanged(room, from: before.cappedRemovals, to: before.cappedRemovals)
        XCTAssertEqual(told, [], "nothing changed, nothing told")
    }
}
