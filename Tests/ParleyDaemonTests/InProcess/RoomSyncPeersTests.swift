import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// Issue 30: which peers sync rooms (features bit 3) is kept across a restart, so an author
/// still sends its new room message itself to only a few of them (`RoomFanOut`) instead of
/// to every member it has not met again since it started.
final class RoomSyncPeersTests: XCTestCase {
    func testPeersSeenWithRoomSyncAreKnownAfterARestartAndFanOutUsesThem() throws {
        let loop = EmbeddedEventLoop()
        let clock = LoopClock(loop: loop)
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        let bob = try InProcessNode(name: "bob", loop: loop, clock: clock)
        defer {
            for n in [alice, bob] { try? FileManager.default.removeItem(atPath: n.directory) }
        }
        let link = try InProcessLink(from: bob, to: alice, loop: loop)
        try link.exchange()
        XCTAssertTrue(alice.node.sessionDriver.table.isOnline(bob.identity))
        XCTAssertTrue(alice.node.knownRoomSyncPeers().contains(bob.identity), "bob's handshake announced bit 3")

        // A room of alice and eleven others, every one of them seen with room sync.
        let (keys, _) = try KeyFiles.loadOrCreate(stateDirectory: alice.directory)
        let others = (0..<11).map { _ in IdentityKeyPair.generate() }
        var ops = [
            try RoomOperation.create(name: "hall", members: others.map(\.publicKey), by: keys.identity, createdAt: 1)
        ]
        for k in others {
            let state = try XCTUnwrap(RoomResolver.resolve(root: ops[0], operations: ops))
            ops.append(try RoomOperation.change(.join, roomID: ops[0].roomID, after: state.heads, by: k, createdAt: 2))
        }
        let state = try XCTUnwrap(RoomResolver.resolve(root: ops[0], operations: ops))
        XCTAssertEqual(state.joined.count, 12)
        for k in others { alice.node.noteRoomSyncPeer(k.publicKey, syncing: true) }
        alice.node.stop()
        loop.run()
        try alice.node.store.close()

        // alice's daemon starts again on the same state directory.
        let again = Node(
            loop: loop, store: try Store(directory: alice.directory), keys: keys, card: alice.node.ownIdentity.card,
            options: NodeOptions(), log: testLogger(), networkKey: nil, clock: clock, random: LowestRandom())
        XCTAssertEqual(again.knownRoomSyncPeers(), Set(others.map(\.publicKey) + [bob.identity]))
        XCTAssertEqual(again.knownSummarizingPeers(), [bob.identity], "bit 5 (operation summaries) kept too")
        XCTAssertEqual(again.roomMessageRecipients(state).count, RoomFanOut.directRecipients)

        // A peer whose node no longer announces the bit (a downgrade) is forgotten too.
        again.noteRoomSyncPeer(others[0].publicKey, syncing: false)
        try again.store.close()
        let third = Node(
            loop: loop, store: try Store(directory: alice.directory), keys: keys, card: alice.node.ownIdentity.card,
            options: NodeOptions(), log: testLogger(), networkKey: nil, clock: clock, random: LowestRandom())
        XCTAssertFalse(third.knownRoomSyncPeers().contains(others[0].publicKey))
        XCTAssertTrue(third.roomMessageRecipients(state).contains(others[0].publicKey), "it gets it directly")
        _ = link
        bob.node.stop()
    }

    /// Room cards: a co-member's name learnt through the room is a key pinned on first use
    /// that may never exchange a message with this node; it is kept while both are in the
    /// room (a colleague away for a week is still shown by name), unlike a stranger's key.
    func testACoMembersKeyIsNotForgottenAsUnused() throws {
        let loop = EmbeddedEventLoop()
        let clock = LoopClock(loop: loop)
        var options = NodeOptions()
        options.unusedIdentityLifetime = .seconds(60)
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock, options: options)
        defer { try? FileManager.default.removeItem(atPath: alice.directory) }
        func pin(_ name: String) throws -> IdentityPublicKey {
            let k = IdentityKeyPair.generate()
            let c = try Card.issue(
                identity: k, noiseKey: NoiseStaticKeyPair.generate().publicKey, displayName: name, hostName: "",
                issuedAt: 1, sequence: 1)
            try alice.node.upsertPeer(
                PeerRecord(
                    identity: k.publicKey, displayName: name, hostName: "", card: c.encoded(), cardSequence: 1,
                    noiseKey: c.noiseKey, trust: .pinned, firstSeen: 1, lastSeen: 1))
            return k.publicKey
        }
        let carol = try pin("carol")
        let stranger = try pin("stranger")
        let me = alice.identity
        try alice.node.store.saveRoom(
            RoomRecord(
                id: RoomID(exactly: [UInt8](repeating: 0xab, count: 16)),
                root: RoomOperationHash(exactly: [UInt8](repeating: 0xcd, count: 32)), name: "lab",
                creator: me, createdAt: 1, version: 2, members: [me, carol].sorted(), status: .joined,
                roles: [me: .owner, carol: .member], joined: [me, carol].sorted(), updatedAt: 1))
        loop.advanceTime(by: .seconds(120))
        alice.node.expireUnusedIdentitiesIfDue(now: clock.monotonicNow())
        XCTAssertNotNil(try alice.node.store.peer(identity: carol), "a co-member's name stays")
        XCTAssertNil(try alice.node.store.peer(identity: stranger), "a stranger's key is forgotten")
    }
}
