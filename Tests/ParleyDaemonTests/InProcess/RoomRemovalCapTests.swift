import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The back-dated write of a removed member (docs/ROOM-SYNC.md section 3), closed by
/// removal caps (features bit 7; docs/PROTOCOL.md "Removal caps"), with two members' room
/// sync drivers, each on its own real store: alice (owner) removes eve; bob has not
/// received the removal yet, carol has. Eve signs a new message anchored before her
/// removal and hands it to bob, who shows it and passes it on to carol.
final class RoomRemovalCapTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directories: [String] = []

    let alice = IdentityKeyPair.generate()
    let bob = IdentityKeyPair.generate()
    let carol = IdentityKeyPair.generate()
    let eve = IdentityKeyPair.generate()

    /// One member's node, as far as room sync goes.
    struct Member {
        let identity: IdentityKeyPair
        let store: Store
        let host: SyncHost
        let sync: RoomSyncDriver<SyncHost>
    }

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
    }

    override func tearDownWithError() throws {
        _ = try? loop.syncShutdownGracefully()
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private func member(_ identity: IdentityKeyPair) throws -> Member {
        let directory = try makeTestDirectory("parley-roomcap")
        directories.append(directory)
        let store = try Store(directory: directory)
        let host = SyncHost()
        let sync = RoomSyncDriver<SyncHost>(
            store: store, identity: identity, clock: clock, log: testLogger(),
            attackLog: RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60)))
        sync.host = host
        return Member(identity: identity, store: store, host: host, sync: sync)
    }

    private func resolve(_ ops: [RoomOperation]) -> RoomState { RoomResolver.resolve(root: ops[0], operations: ops)! }

    private func change(
        _ c: RoomOperation.Change, by who: IdentityKeyPair, after ops: [RoomOperation], cap: UInt64? = nil
    ) throws -> RoomOperation {
        try RoomOperation.change(
            c, roomID: ops[0].roomID, after: resolve(ops).heads, by: who, createdAt: 2, removalCap: cap)
    }

    /// A whole node's store holds these operations and the joined room they resolve to.
    private func keep(_ ops: [RoomOperation], in store: Store) throws {
        for op in ops {
            _ = try store.insertRoomOperation(
                StoredRoomOperation(
                    hash: op.hash, room: ops[0].roomID, sequence: Int64(op.sequence), encoded: op.encoded()),
                at: 1)
        }
        let state = resolve(ops)
        try store.saveRoom(
            RoomRecord(
                id: state.roomID, root: state.root, name: state.name, creator: state.creator,
                createdAt: Int64(state.createdAt), version: Int64(state.version), members: state.members,
                status: .joined, roles: state.roles, joined: state.joined, updatedAt: 1))
    }

    /// `m` holds these operations (and the room row a store needs).
    private func give(_ ops: [RoomOperation], to m: Member) throws -> RoomState {
        let state = resolve(ops)
        m.host.rooms[state.roomID] = (state, Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) }))
        try m.store.saveRoom(
            RoomRecord(
                id: state.roomID, root: state.root, name: state.name, creator: state.creator,
                createdAt: Int64(state.createdAt), version: Int64(state.version), members: state.members,
                status: .joined, roles: state.roles, joined: state.joined, updatedAt: clock.wallMilliseconds()))
        return state
    }

    private func signed(_ body: String, by author: IdentityKeyPair, sequence: UInt64, at ops: [RoomOperation]) throws
        -> SignedRoomMessage
    {
        try SignedRoomMessage.sign(
            roomID: ops[0].roomID, roomSequence: sequence, id: .random(), createdAt: UInt64(clock.wallMilliseconds()),
            anchor: resolve(ops).heads.map(\.hash), body: body, by: author)
    }

    /// What `m` shows of the room: the bodies of the messages not withdrawn or deleted.
    private func shown(_ m: Member, _ room: RoomID) throws -> [String] {
        try m.store.roomMessages(room: room, after: nil, limit: 50).filter { $0.deletedAt == nil }.map(\.body)
    }

    private func hand(_ messages: [SignedRoomMessage], from peer: IdentityKeyPair, to m: Member) throws -> [MessageID] {
        let link = m.host.links[peer.publicKey] ?? m.host.connect(peer.publicKey)
        return try m.sync.receivedSignedMessages(messages.map { .verified($0) }, from: peer.publicKey, on: link).acks
    }

    /// #lab: alice creates it with bob, carol and eve; all join.
    private func lab() throws -> [RoomOperation] {
        var ops = [
            try RoomOperation.create(
                name: "lab", members: [bob, carol, eve].map(\.publicKey), by: alice, createdAt: 1)
        ]
        for m in [bob, carol, eve] { ops.append(try change(.join, by: m, after: ops)) }
        return ops
    }

    /// The attack, and the convergence: carol (holding the removal, cap 2) refuses eve's
    /// back-dated 3 handed over by bob, but takes eve's 2, sent before the removal and
    /// late to reach her; bob, once the removal reaches him, withdraws 3 (a tombstone and
    /// `message.updated`) and no longer passes it on. Both then show the same history.
    func testABackDatedMessageAboveTheCapIsRefusedAndWithdrawn() throws {
        let bobNode = try member(bob)
        let carolNode = try member(carol)
        let ops = try lab()
        _ = try give(ops, to: bobNode)
        _ = try give(ops, to: carolNode)
        let room = ops[0].roomID
        let one = try signed("eve 1", by: eve, sequence: 1, at: ops)
        let two = try signed("eve 2", by: eve, sequence: 2, at: ops)
        _ = try hand([one, two], from: eve, to: bobNode)
        _ = try hand([one], from: eve, to: carolNode)  // 2 is late to reach carol

        // Alice had received eve's 1 and 2: she removes eve with cap 2. Carol gets it, bob not yet.
        let removal = try change(.remove(eve.publicKey), by: alice, after: ops, cap: 2)
        let withRemoval = try give(ops + [removal], to: carolNode)
        XCTAssertFalse(withRemoval.hasJoined(eve.publicKey))

        // Eve, removed, writes anchored before her removal, straight to bob (lagging).
        let backDated = try signed("eve after her removal", by: eve, sequence: 3, at: ops)
        XCTAssertEqual(try hand([backDated], from: eve, to: bobNode), [backDated.id])
        XCTAssertEqual(try shown(bobNode, room), ["eve 1", "eve 2", "eve after her removal"], "bob cannot tell yet")

        // Bob passes on what carol lacks: 2 and the back-dated 3.
        let acks = try hand([two, backDated], from: bob, to: carolNode)
        XCTAssertEqual(Set(acks), [two.id, backDated.id], "both final: the refused one is acknowledged and dropped")
        XCTAssertEqual(try shown(carolNode, room), ["eve 1", "eve 2"], "below the cap stands, above is refused")

        // The removal reaches bob: he withdraws 3 and stops passing it on.
        let bobState = try give(ops + [removal], to: bobNode)
        bobNode.sync.withdrawBeyondCaps(bobState)
        XCTAssertEqual(try shown(bobNode, room), try shown(carolNode, room), "the same history everywhere")
        XCTAssertEqual(bobNode.host.updated.map(\.id), [backDated.id], "the client hears the message go")
        XCTAssertNotNil(bobNode.host.updated.first?.deletedAt)
        XCTAssertEqual(bobNode.host.deletes, 1, "the search index is purged of its words")
        let entitled = bobNode.sync.entitlement()
        XCTAssertFalse(entitled(room, eve.publicKey, 3, carol.publicKey), "never passed on again")
        XCTAssertTrue(entitled(room, eve.publicKey, 2, carol.publicKey))
        bobNode.sync.withdrawBeyondCaps(bobState)
        XCTAssertEqual(bobNode.host.updated.count, 1, "withdrawn once")

        // Eve re-added (alice adds, eve joins on the heads): her next message, written after
        // the removal, passes the cap.
        var readded = ops + [removal]
        readded.append(try change(.add(eve.publicKey), by: alice, after: readded))
        readded.append(try change(.join, by: eve, after: readded))
        _ = try give(readded, to: carolNode)
        let back = try signed("eve again", by: eve, sequence: 4, at: readded)
        _ = try hand([back], from: eve, to: carolNode)
        XCTAssertEqual(try shown(carolNode, room), ["eve 1", "eve 2", "eve again"])
    }

    /// The cap a member signs: the highest of the target's messages it holds, once every
    /// other member is known to read caps (bit 7); an uncapped remove while one is not.
    func testTheCapSignedIsTheHighestHeldOnceEveryMemberReadsCaps() throws {
        let carolNode = try member(carol)
        let ops = try lab()
        let state = try give(ops, to: carolNode)
        _ = try hand(
            [try signed("1", by: eve, sequence: 1, at: ops), try signed("3", by: eve, sequence: 3, at: ops)],
            from: eve, to: carolNode)
        XCTAssertNil(try carolNode.sync.removalCapToSign(target: eve.publicKey, in: state), "nobody known yet")
        for peer in [alice, bob] {
            carolNode.sync.sessionStarted(carolNode.host.connect(peer.publicKey), peer: peer.publicKey)
        }
        let eveLink = carolNode.host.connect(eve.publicKey)
        eveLink.remoteFeatures.remove(.removalCaps)
        carolNode.sync.sessionStarted(eveLink, peer: eve.publicKey)
        XCTAssertNil(
            try carolNode.sync.removalCapToSign(target: eve.publicKey, in: state), "eve's node could not decode it")
        eveLink.remoteFeatures = .supported
        carolNode.sync.sessionStarted(eveLink, peer: eve.publicKey)
        XCTAssertEqual(
            try carolNode.sync.removalCapToSign(target: eve.publicKey, in: state), 3, "the highest held, holes or not")
        XCTAssertEqual(try carolNode.sync.removalCapToSign(target: bob.publicKey, in: state), 0, "none held")
    }
    /// The whole node: `rooms.remove` signs the cap room sync gives, through the node's
    /// routing (Node+RoomSync.swift): uncapped while a member is not known to read caps,
    /// then the highest of eve's messages the node holds.
    func testANodeSignsItsRemovalWithTheCapOnceEveryMemberReadsCaps() throws {
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        let aliceKey = try KeyFiles.loadOrCreate(stateDirectory: alice.directory).0.identity
        let root = try RoomOperation.create(
            name: "lab", members: [bob.publicKey, eve.publicKey], by: aliceKey, createdAt: 1)
        var ops = [root]
        for m in [bob, eve] { ops.append(try change(.join, by: m, after: ops)) }
        let store = alice.node.store
        try keep(ops, in: store)
        alice.node.start()
        loop.run()
        _ = try store.insertSignedRoomMessages(
            try ([1, 2, 5] as [UInt64]).map { n in
                let m = try signed("eve \(n)", by: eve, sequence: n, at: ops)
                return Store.SignedRoomMessageRow(
                    room: root.roomID, author: eve.publicKey, sequence: n, id: m.id, encoded: m.encoded())
            }, at: 1)
        func removal(of who: IdentityKeyPair) throws -> RoomOperation? {
            try store.roomOperations(room: root.roomID).map { try RoomOperation.decode($0.encoded) }
                .first { $0.kind == .remove && $0.target == who.publicKey }
        }

        alice.node.noteRoomSyncPeer(bob.publicKey, .removalCaps, syncing: true)
        _ = try alice.node.changeRoom(try XCTUnwrap(store.room(id: root.roomID)), .remove(bob.publicKey))
        XCTAssertNil(try XCTUnwrap(try removal(of: bob)).removalCap, "eve's node is not known to read caps")

        alice.node.noteRoomSyncPeer(eve.publicKey, .removalCaps, syncing: true)
        _ = try alice.node.changeRoom(try XCTUnwrap(store.room(id: root.roomID)), .remove(eve.publicKey))
        XCTAssertEqual(try XCTUnwrap(try removal(of: eve)).removalCap, 5, "the highest of eve's held")
        alice.node.stop()
    }
    /// A capped remove stored before a crash, with the withdrawals it calls for not made:
    /// made at the next start.
    func testWithdrawalsMissedBeforeACrashAreMadeAtStart() throws {
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        let aliceKey = try KeyFiles.loadOrCreate(stateDirectory: alice.directory).0.identity
        let root = try RoomOperation.create(
            name: "lab", members: [bob.publicKey, eve.publicKey], by: aliceKey, createdAt: 1)
        var ops = [root]
        for m in [bob, eve] { ops.append(try change(.join, by: m, after: ops)) }
        let messages = try ([1, 2] as [UInt64]).map { try signed("eve \($0)", by: eve, sequence: $0, at: ops) }
        ops.append(try change(.remove(eve.publicKey), by: aliceKey, after: ops, cap: 1))
        let store = alice.node.store
        try keep(ops, in: store)
        _ = try store.insertSignedRoomMessages(
            messages.map {
                Store.SignedRoomMessageRow(
                    room: root.roomID, author: eve.publicKey, sequence: $0.roomSequence, id: $0.id,
                    encoded: $0.encoded())
            }, at: 1)
        _ = try store.storeIncomingRoomMessages(
            messages.map {
                IncomingMessage(
                    id: $0.id, sender: eve.publicKey, recipient: aliceKey.publicKey,
                    sequence: Int64($0.roomSequence), createdAt: Int64($0.createdAt), body: $0.body)
            }, room: root.roomID, at: 1)
        let shownNow = {
            try store.roomMessages(room: root.roomID, after: nil, limit: 10).filter { $0.deletedAt == nil }.map(\.body)
        }
        XCTAssertEqual(try shownNow(), ["eve 1", "eve 2"])

        alice.node.start()
        loop.run()
        XCTAssertEqual(try shownNow(), ["eve 1"], "2 is above the cap")
        XCTAssertTrue(
            alice.events.contains { if case .messageUpdated(let m) = $0 { m.id == messages[1].id } else { false } })
        alice.node.stop()
    }
}
