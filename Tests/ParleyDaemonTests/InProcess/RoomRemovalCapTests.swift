import Foundation
import NIOCore
import NIOEmbedded
import ParleyControlProtocol
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
    /// Node N in carol's "lab" with alice, bob and eve, eve made an admin; N started, and an
    /// inbound link to hand it room sync's messages on.
    private func nodeInLabWithEveAsAdmin() throws -> (InProcessNode, [RoomOperation], PeerConnection) {
        let n = try InProcessNode(name: "n", loop: loop, clock: clock)
        let nKey = try KeyFiles.loadOrCreate(stateDirectory: n.directory).0.identity
        var ops = [
            try RoomOperation.create(
                name: "lab", members: [nKey, alice, bob, eve].map(\.publicKey), by: carol, createdAt: 1)
        ]
        for m in [nKey, alice, bob, eve] { ops.append(try change(.join, by: m, after: ops)) }
        ops.append(try change(.setRole(eve.publicKey, .admin), by: carol, after: ops))
        try keep(ops, in: n.node.store)
        n.node.start()
        loop.run()
        return (n, ops, n.node.makeConnection(direction: .inbound, dialedAddress: nil))
    }

    private func lab() throws -> [RoomOperation] {
        var ops = [
            try RoomOperation.create(
                name: "lab", members: [bob, carol, eve].map(\.publicKey), by: alice, createdAt: 1)
        ]
        for m in [bob, carol, eve] { ops.append(try change(.join, by: m, after: ops)) }
        return ops
    }

    /// The attack, and what a cap does: carol (holding the removal, cap 2) refuses eve's
    /// back-dated 3 handed over by bob; bob, who took 3 before the removal reached him,
    /// keeps showing it (nothing is withdrawn: a remove's validity can change later) but
    /// never passes it on once the removal is there, and refuses any further back-dated
    /// message. Eve's 2, sent before the removal and late to reach both, is taken by both.
    func testABackDatedMessageAboveTheCapIsRefusedAndNeverPassedOn() throws {
        let bobNode = try member(bob)
        let carolNode = try member(carol)
        let ops = try lab()
        _ = try give(ops, to: bobNode)
        _ = try give(ops, to: carolNode)
        let room = ops[0].roomID
        let one = try signed("eve 1", by: eve, sequence: 1, at: ops)
        let two = try signed("eve 2", by: eve, sequence: 2, at: ops)
        _ = try hand([one], from: eve, to: bobNode)
        _ = try hand([one], from: eve, to: carolNode)  // 2 is late to reach both

        // Alice had received eve's 1 and 2: she removes eve with cap 2. Carol gets it, bob not yet.
        let removal = try change(.remove(eve.publicKey), by: alice, after: ops, cap: 2)
        let withRemoval = try give(ops + [removal], to: carolNode)
        XCTAssertFalse(withRemoval.hasJoined(eve.publicKey))

        // Eve, removed, writes anchored before her removal, straight to bob (lagging).
        let backDated = try signed("eve after her removal", by: eve, sequence: 3, at: ops)
        XCTAssertEqual(try hand([backDated], from: eve, to: bobNode), [backDated.id])
        XCTAssertEqual(try shown(bobNode, room), ["eve 1", "eve after her removal"], "bob cannot tell yet")

        // Bob passes it on to carol, who refuses it.
        XCTAssertEqual(try hand([backDated], from: bob, to: carolNode), [backDated.id], "final: acknowledged, dropped")
        XCTAssertEqual(try shown(carolNode, room), ["eve 1"], "above the cap is refused")

        // The removal reaches bob: he keeps what he took, but never passes it on.
        _ = try give(ops + [removal], to: bobNode)
        XCTAssertEqual(try shown(bobNode, room), ["eve 1", "eve after her removal"], "nothing withdrawn")
        XCTAssertEqual(bobNode.host.updated.count, 0, "no message.updated")
        XCTAssertEqual(bobNode.host.deletes, 0)
        let entitled = bobNode.sync.entitlement()
        XCTAssertFalse(entitled(room, eve.publicKey, 3, carol.publicKey), "never passed on")
        let more = try signed("eve again, back-dated", by: eve, sequence: 4, at: ops)
        XCTAssertEqual(try hand([more], from: carol, to: bobNode), [more.id])
        XCTAssertEqual(try shown(bobNode, room), ["eve 1", "eve after her removal"], "now refused on arrival")

        // Eve's 2, below the cap and late: both take it.
        XCTAssertEqual(try hand([two], from: alice, to: bobNode), [two.id])
        XCTAssertEqual(try hand([two], from: alice, to: carolNode), [two.id])
        XCTAssertEqual(try shown(carolNode, room), ["eve 1", "eve 2"])
        XCTAssertEqual(Set(try shown(bobNode, room)), ["eve 1", "eve after her removal", "eve 2"])
        XCTAssertTrue(entitled(room, eve.publicKey, 2, carol.publicKey), "bob passes 2 on")
        XCTAssertFalse(entitled(room, eve.publicKey, 3, carol.publicKey))

        // Eve re-added (alice adds, eve joins on the heads): her next message, written after
        // the removal, passes the cap.
        var readded = ops + [removal]
        readded.append(try change(.add(eve.publicKey), by: alice, after: readded))
        readded.append(try change(.join, by: eve, after: readded))
        _ = try give(readded, to: carolNode)
        let back = try signed("eve again", by: eve, sequence: 5, at: readded)
        _ = try hand([back], from: eve, to: carolNode)
        XCTAssertEqual(try shown(carolNode, room), ["eve 1", "eve 2", "eve again"])
    }

    /// Why a cap never withdraws what a member already took: whether a remove is valid can
    /// change later. Eve, an admin, is removed by the owner carol (D); she signs a remove of
    /// alice with cap 0, parented before D, and hands it to node N, which does not hold D
    /// yet. At N it is valid for now: alice's messages above 0 arriving now are refused, but
    /// those N holds stay shown. Once D reaches N the remove is void and caps nothing:
    /// alice's message refused before is taken when offered again (room sync offers it).
    func testARemovedAdminsBackDatedRemoveWithdrawsNothingAndCapsNothingOnceVoid() throws {
        let (n, ops, link) = try nodeInLabWithEveAsAdmin()
        let room = ops[0].roomID
        let store = n.node.store
        func pass(_ messages: [SignedRoomMessage], from peer: IdentityKeyPair) throws -> [MessageID] {
            try n.node.roomSync.receivedSignedMessages(messages.map { .verified($0) }, from: peer.publicKey, on: link)
                .acks
        }
        let shownAtN = {
            try store.roomMessages(room: room, after: nil, limit: 50).filter { $0.deletedAt == nil }.map(\.body)
        }
        let mine = try ([1, 2] as [UInt64]).map { try signed("alice \($0)", by: alice, sequence: $0, at: ops) }
        XCTAssertEqual(Set(try pass(mine, from: alice)), Set(mine.map(\.id)))
        XCTAssertEqual(try shownAtN(), ["alice 1", "alice 2"])

        // Carol removes eve (D); N does not hold it yet. Eve back-dates a remove of alice.
        let d = try change(.remove(eve.publicKey), by: carol, after: ops)
        let forged = try change(.remove(alice.publicKey), by: eve, after: ops, cap: 0)
        XCTAssertTrue(try n.node.rooms.accept(forged, from: eve.publicKey))
        XCTAssertFalse(try XCTUnwrap(n.node.rooms.entry(room).state).hasJoined(alice.publicKey), "valid at N, for now")
        XCTAssertEqual(try shownAtN(), ["alice 1", "alice 2"], "nothing N holds is withdrawn")
        // Only marked (shown again as written after alice's removal, as N sees it now):
        // the messages themselves are as they were.
        let told = n.events.compactMap { if case .messageUpdated(let m) = $0 { m } else { nil } }
        XCTAssertEqual(told.map(\.body).sorted(), ["alice 1", "alice 2"])
        XCTAssertTrue(told.allSatisfy { $0.deletedAt == nil })
        XCTAssertEqual(
            n.node.messageInfos(try store.roomMessages(room: room, after: nil, limit: 50)).map { $0.room?.afterRemoval },
            [true, true])

        // Alice's 3, written before she could see either operation, handed over by bob:
        // refused while the remove stands (not stored).
        let three = try signed("alice 3", by: alice, sequence: 3, at: ops)
        XCTAssertEqual(try pass([three], from: bob), [three.id])
        XCTAssertEqual(try shownAtN(), ["alice 1", "alice 2"])

        // D reaches N: eve's remove is void, alice a member again; 3, offered again, is taken.
        XCTAssertTrue(try n.node.rooms.accept(d, from: carol.publicKey))
        let state = try XCTUnwrap(n.node.rooms.entry(room).state)
        XCTAssertFalse(state.hasJoined(eve.publicKey))
        XCTAssertTrue(state.hasJoined(alice.publicKey), "the removed admin's remove is void")
        XCTAssertEqual(try pass([three], from: bob), [three.id])
        XCTAssertEqual(try shownAtN(), ["alice 1", "alice 2", "alice 3"], "the void remove refuses nothing")
        XCTAssertEqual(
            n.node.messageInfos(try store.roomMessages(room: room, after: nil, limit: 50)).map { $0.room?.afterRemoval },
            [false, false, false], "nor marks anything")
        let four = try signed("alice 4", by: alice, sequence: 4, at: ops)
        XCTAssertEqual(try pass([four], from: alice), [four.id])
        XCTAssertEqual(try shownAtN(), ["alice 1", "alice 2", "alice 3", "alice 4"])
        n.node.stop()
    }

    /// What a member already took is marked, reversibly (docs/PROTOCOL.md "What a member
    /// already took"): node N takes alice's back-dated 2 (and her reaction, sequence 3, on
    /// bob's message) before any removal reaches it. Eve, an admin removed by carol (D),
    /// signs a capped remove of alice (cap 1) parented before D and hands it to N: valid at
    /// N for now, so 2 is shown as written after alice's removal, not unread, and her
    /// reaction is not shown. Then D arrives: eve's remove is void and the marks go. Each
    /// change is told (`message.updated`); nothing stored is lost at any point.
    func testAMessageTakenBeforeTheRemovalIsMarkedAndUnmarkedWhenTheRemoveTurnsVoid() throws {
        let (n, ops, link) = try nodeInLabWithEveAsAdmin()
        let room = ops[0].roomID
        let store = n.node.store
        func pass(_ messages: [SignedRoomMessage], from peer: IdentityKeyPair) throws {
            _ = try n.node.roomSync.receivedSignedMessages(messages.map { .verified($0) }, from: peer.publicKey, on: link)
        }
        let anchor = resolve(ops).heads.map(\.hash)
        let bobs = try signed("bob 1", by: bob, sequence: 1, at: ops)
        let one = try signed("alice 1", by: alice, sequence: 1, at: ops)
        let two = try signed("alice 2", by: alice, sequence: 2, at: ops)
        let reaction = try SignedRoomMessage.signChange(
            .reaction(try Reaction("👍"), added: true), of: bobs.id, roomID: room, roomSequence: 3, id: .random(),
            createdAt: 3, anchor: anchor, by: alice)
        try pass([bobs], from: bob)
        try pass([one, two], from: alice)
        try pass([reaction], from: alice)
        func view() throws -> [String: MessageInfo] {
            let infos = n.node.messageInfos(try store.roomMessages(room: room, after: nil, limit: 50))
            return Dictionary(uniqueKeysWithValues: infos.map { ($0.body, $0) })
        }
        func unread() throws -> Int { n.node.roomInfo(try XCTUnwrap(store.room(id: room))).unread }
        func updates() -> [String] {
            n.events.compactMap { if case .messageUpdated(let m) = $0 { m.body } else { nil } }.sorted()
        }
        XCTAssertEqual(try view().mapValues { $0.room?.afterRemoval }, ["bob 1": false, "alice 1": false, "alice 2": false])
        XCTAssertEqual(try view()["bob 1"]?.reactions.map(\.reaction), ["👍"])
        XCTAssertEqual(try unread(), 3)
        let updatesBefore = updates()

        // Eve's back-dated remove of alice (cap 1) reaches N; carol's removal of eve not yet.
        let d = try change(.remove(eve.publicKey), by: carol, after: ops)
        let forged = try change(.remove(alice.publicKey), by: eve, after: ops, cap: 1)
        XCTAssertTrue(try n.node.rooms.accept(forged, from: eve.publicKey))
        var shown = try view()
        XCTAssertEqual(shown.count, 3, "nothing withdrawn")
        XCTAssertEqual(shown["alice 2"]?.room?.afterRemoval, true, "written after alice's removal, as N sees it now")
        XCTAssertEqual(shown["alice 1"]?.room?.afterRemoval, false, "at the cap: part of the history")
        XCTAssertEqual(shown["bob 1"]?.reactions, [], "alice's reaction above the cap is not shown")
        XCTAssertEqual(try unread(), 2, "a marked message is never unread")
        XCTAssertEqual(updates(), (updatesBefore + ["alice 2", "bob 1"]).sorted(), "open views are told")

        // D reaches N: eve's remove is void, the marks go by themselves.
        XCTAssertTrue(try n.node.rooms.accept(d, from: carol.publicKey))
        XCTAssertTrue(try XCTUnwrap(n.node.rooms.entry(room).state).hasJoined(alice.publicKey))
        shown = try view()
        XCTAssertEqual(shown.mapValues { $0.room?.afterRemoval }, ["bob 1": false, "alice 1": false, "alice 2": false])
        XCTAssertEqual(shown["bob 1"]?.reactions.map(\.reaction), ["👍"])
        XCTAssertEqual(try unread(), 3)
        XCTAssertEqual(updates(), (updatesBefore + ["alice 2", "alice 2", "bob 1", "bob 1"]).sorted())
        n.node.stop()
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
}
