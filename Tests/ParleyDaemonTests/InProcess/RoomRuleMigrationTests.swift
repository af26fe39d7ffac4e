import Foundation
import NIOEmbedded
import ParleyCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// Issue 29 (H2): a store written under the version-2 room rule, where a demoted admin's
/// void removal of bob (signed from before bob's join) kept bob from joining, is resolved
/// again when the node starts: bob is a joined member again.
final class RoomRuleMigrationTests: XCTestCase {
    func testAStoredRoomResolvedUnderTheOldRuleIsResolvedAgainAtStart() throws {
        let loop = EmbeddedEventLoop()
        let clock = LoopClock(loop: loop)
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        let aliceKey = try KeyFiles.loadOrCreate(stateDirectory: alice.directory).0.identity
        let mallory = IdentityKeyPair.generate()
        let bob = IdentityKeyPair.generate()
        let root = try RoomOperation.create(name: "team", members: [mallory.publicKey], by: aliceKey, createdAt: 1)
        let rid = root.roomID
        func sign(_ c: RoomOperation.Change, _ k: IdentityKeyPair, after p: RoomOperation) throws -> RoomOperation {
            try RoomOperation.change(c, roomID: rid, after: [p], by: k, createdAt: 2)
        }
        let mj = try sign(.join, mallory, after: root)
        let promote = try sign(.setRole(mallory.publicKey, .admin), aliceKey, after: mj)
        let addBob = try sign(.add(bob.publicKey), aliceKey, after: promote)
        let bobJoins = try sign(.join, bob, after: addBob)
        let demote = try sign(.setRole(mallory.publicKey, .member), aliceKey, after: bobJoins)
        let kick = try sign(.remove(bob.publicKey), mallory, after: addBob)  // from before bob's join
        let store = alice.node.store
        for op in [root, mj, promote, addBob, bobJoins, demote, kick] {
            _ = try store.insertRoomOperation(
                StoredRoomOperation(
                    hash: op.hash, room: rid, sequence: Int64(op.sequence), encoded: op.encoded()), at: 1)
        }
        // What the version-2 rule computed: bob invited, never joined (his join void).
        let members = [aliceKey.publicKey, bob.publicKey, mallory.publicKey].sorted()
        let old = RoomRecord(
            id: rid, root: root.hash, name: "team", creator: aliceKey.publicKey, createdAt: 1,
            version: Int64(demote.sequence), members: members, status: .joined,
            roles: [aliceKey.publicKey: .owner, bob.publicKey: .member, mallory.publicKey: .member],
            joined: [aliceKey.publicKey, mallory.publicKey].sorted(), updatedAt: 1)
        try store.saveRoom(old)
        XCTAssertFalse(try XCTUnwrap(store.room(id: rid)).joined.contains(bob.publicKey))

        alice.node.start()
        loop.run()
        let now = try XCTUnwrap(store.room(id: rid))
        XCTAssertTrue(now.joined.contains(bob.publicKey), "bob is a joined member again")
        XCTAssertEqual(now.members, members)
        XCTAssertEqual(now.status, .joined)
        XCTAssertTrue(
            alice.events.contains { if case .roomUpdated(let r) = $0 { return r.id == rid } else { return false } })
        // Nothing changes at the next start: the cache now says what the operations say.
        XCTAssertEqual(try alice.node.reResolveStoredRooms(), [])
        alice.node.stop()
    }
}
