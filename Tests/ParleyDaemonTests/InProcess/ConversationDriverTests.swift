import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The conversation records' driver on a virtual-time loop with a real store (SQLite in a
/// temporary directory), a host that stands in for the node (sessions, room state) and
/// links that record what the driver sends: who may edit, delete and react (a former
/// correspondent, a removed member), the action outbox, read receipts and the status line.
final class ConversationDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var me: TestIdentity!
    var bob: TestIdentity!
    var host: ConversationTestHost!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-conversation")
        store = try Store(directory: directory)
        me = try TestIdentity(name: "me")
        bob = try TestIdentity(name: "bob")
        host = ConversationTestHost(me: me.identity)
    }

    override func tearDownWithError() throws {
        host = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func driver() -> ConversationDriver<ConversationTestHost> {
        let d = ConversationDriver<ConversationTestHost>(
            store: store, loop: loop, clock: clock, log: testLogger(), attackLog: nil)
        d.host = host
        return d
    }

    private func fromBob(_ body: String, sequence: Int64 = 1) throws -> StoredMessage {
        let chat = ReceivedChat(id: .random(), sequence: sequence, createdAt: 1, body: body)
        return try store.storeIncoming([chat], from: bob.identity, to: me.identity, at: 1, journal: nil)[0].message
    }

    private func toBob(_ body: String) throws -> StoredMessage {
        try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob.identity, body: body, createdAt: 1)],
            sender: me.identity)[0]
    }

    private func action(
        _ a: MessageActionRecord.Action, on target: MessageID, sequence: UInt64 = 5, room: RoomID? = nil
    ) -> MessageActionRecord {
        MessageActionRecord(id: .random(), sequence: sequence, createdAt: 2, target: target, action: a, room: room)
    }

    /// A room of me and bob, both joined; and the same room after I removed bob.
    private func room() throws -> (id: RoomID, withBob: RoomState, bobRemoved: RoomState) {
        let root = try RoomOperation.create(
            name: "lab", members: [bob.identity], by: me.keys.identity, createdAt: 1)
        let join = try RoomOperation.change(
            .join, roomID: root.roomID, after: [root], by: bob.keys.identity, createdAt: 2)
        let out = try RoomOperation.change(
            .remove(bob.identity), roomID: root.roomID, after: [join], by: me.keys.identity, createdAt: 3)
        let withBob = try XCTUnwrap(RoomResolver.resolve(root: root, operations: [root, join]))
        let removed = try XCTUnwrap(RoomResolver.resolve(root: root, operations: [root, join, out]))
        XCTAssertTrue(withBob.hasJoined(bob.identity))
        XCTAssertFalse(removed.hasJoined(bob.identity))
        return (root.roomID, withBob, removed)
    }

    // MARK: Actions from a peer

    /// Bob may edit what he wrote, never what I wrote him: the refused edit is acked (a
    /// resend would be refused again), changes nothing and tells the user nothing.
    func testAnEditBySomeoneOtherThanTheAuthorIsRefused() throws {
        let conversation = driver()
        let link = host.connect(bob.identity)
        let mine = try toBob("my words")
        let his = try fromBob("his words")
        let forged = action(.edit(body: "words put in my mouth"), on: mine.id)
        let fair = action(.edit(body: "his words, corrected"), on: his.id)
        conversation.received([forged, fair], on: link)
        XCTAssertEqual(link.acks, [[forged.id, fair.id]], "both acknowledged")
        XCTAssertEqual(try store.message(id: mine.id, sender: me.identity)?.body, "my words")
        XCTAssertNil(try store.message(id: mine.id, sender: me.identity)?.editedAt)
        XCTAssertEqual(try store.message(id: his.id, sender: bob.identity)?.body, "his words, corrected")
        XCTAssertEqual(host.updated.map(\.id), [his.id], "only the author's edit is shown")

        // Nor may he delete it.
        conversation.received([action(.delete, on: mine.id, sequence: 6)], on: link)
        XCTAssertNil(try store.message(id: mine.id, sender: me.identity)?.deletedAt)
        XCTAssertEqual(host.updated.count, 1)
    }

    // MARK: The receive quota counts actions

    /// The receive quota over the test's store: a stranger may make it keep `rows` rows
    /// (messages and actions together).
    private func quota(rows: Int) -> ReceiveQuotaDriver {
        var limits = ReceiveQuota.standard
        limits.stranger = ReceiveQuota.Allowance(messages: rows, bytes: 1 << 20)
        return ReceiveQuotaDriver(
            store: store, directory: PeerDirectory(store: store, myName: "me"), limits: limits, clock: clock,
            log: testLogger())
    }

    /// Bob (a stranger here, allowed 6 rows) wrote one message, then reacts and edits:
    /// his first five changes are stored and applied; after that every new one, of any
    /// kind (a reaction toggled on and off, an edit, a delete, a change of an unknown
    /// message), is answered with `refused` (peerQuota), not acknowledged, and the store's
    /// rows from him stop growing. A resend of a change already stored is acknowledged,
    /// never refused; his message and the changes taken stay as they were.
    func testAFloodOfReactionsAndEditsIsRefusedOverTheQuota() throws {
        host.quota = quota(rows: 6)
        let his = try fromBob("hi")
        let conversation = driver()
        let link = host.connect(bob.identity)
        let thumbs = try Reaction("👍")
        let legit = [
            action(.reaction(thumbs, added: true), on: his.id, sequence: 2),
            action(.edit(body: "hi all"), on: his.id, sequence: 3),
            action(.reaction(thumbs, added: false), on: his.id, sequence: 4),
            action(.reaction(thumbs, added: true), on: his.id, sequence: 5),
            action(.edit(body: "hi everyone"), on: his.id, sequence: 6)
        ]
        conversation.received(legit, on: link)
        XCTAssertEqual(link.acks, [legit.map(\.id)], "a small stream is taken")
        XCTAssertTrue(link.refused.isEmpty)
        XCTAssertEqual(try store.message(id: his.id, sender: bob.identity)?.body, "hi everyone")
        XCTAssertEqual(try store.incomingActionRows(from: bob.identity), 5)

        // Over the allowance: toggles, edits, a delete, an unknown target; in two reads.
        var flood: [MessageActionRecord] = []
        for i in 0..<20 {
            let seq = UInt64(10 + i)
            switch i % 4 {
            case 0: flood.append(action(.reaction(thumbs, added: false), on: his.id, sequence: seq))
            case 1: flood.append(action(.reaction(thumbs, added: true), on: his.id, sequence: seq))
            case 2: flood.append(action(.edit(body: String(repeating: "x", count: 1000)), on: his.id, sequence: seq))
            default: flood.append(action(.reaction(thumbs, added: true), on: .random(), sequence: seq))
            }
        }
        flood.append(action(.delete, on: his.id, sequence: 99))
        conversation.received(Array(flood[..<10]), on: link)
        conversation.received(Array(flood[10...]), on: link)
        XCTAssertEqual(link.acks.count, 1, "nothing over the quota is acknowledged")
        XCTAssertEqual(link.refused.map(\.0), [.peerQuota, .peerQuota])
        XCTAssertEqual(link.refused.flatMap(\.1), flood.map(\.id), "every one refused, so it stays queued there")
        XCTAssertEqual(try store.incomingActionRows(from: bob.identity), 5, "the store's rows stopped growing")
        // What the quota counts from the store: his message (its text now the last edit's)
        // and his five changes with the text each row keeps (two edits, three reaction
        // rows: an add, its withdrawal, an add again), in his usage, everyone's and
        // strangers' together.
        let texts = 2 * "hi everyone".utf8.count + "hi all".utf8.count + 3 * thumbs.text.utf8.count
        XCTAssertEqual(try store.incomingUsage(from: bob.identity).messages, 6)
        XCTAssertEqual(try store.incomingUsage(from: bob.identity).bytes, texts)
        XCTAssertEqual(try store.incomingUsageTotal().messages, 6)
        XCTAssertEqual(try store.incomingUsageFromStrangers().messages, 6)
        let kept = try XCTUnwrap(store.message(id: his.id, sender: bob.identity))
        XCTAssertEqual(kept.body, "hi everyone", "nothing refused was applied")
        XCTAssertNil(kept.deletedAt)
        XCTAssertNil(link.closed)

        // A resend of one already stored (its ack was lost) is acknowledged, not refused.
        conversation.received([legit[1]], on: link)
        XCTAssertEqual(link.acks.last, [legit[1].id])
        XCTAssertEqual(link.refused.count, 2)
    }

    /// A peer whose version cannot keep refused changes queued (no features bit 6) would
    /// resend a refused one at once: over the quota its changes are acknowledged and
    /// dropped instead, and the store's rows stop growing all the same. When the user
    /// forgets the conversation, its changes go with it and make room again.
    func testOverTheQuotaAnOlderPeersChangesAreDroppedAndForgettingMakesRoom() throws {
        let quota = quota(rows: 3)
        host.quota = quota
        let his = try fromBob("hi")
        let conversation = driver()
        let link = host.connect(bob.identity)
        link.remoteFeatures = [.conversation]
        let thumbs = try Reaction("👍")
        let flood = (0..<12).map {
            action(.reaction(thumbs, added: $0 % 2 == 0), on: his.id, sequence: UInt64(2 + $0))
        }
        conversation.received(flood, on: link)
        XCTAssertEqual(link.acks.flatMap { $0 }.sorted { $0.hex < $1.hex }, flood.map(\.id).sorted { $0.hex < $1.hex })
        XCTAssertTrue(link.refused.isEmpty, "an older peer is never sent a refusal it would answer by resending")
        XCTAssertEqual(try store.incomingActionRows(from: bob.identity), 2, "the rows stopped at the quota")
        XCTAssertNil(link.closed)

        XCTAssertGreaterThan(try store.deleteConversation(with: bob.identity), 0)
        quota.countsChanged()
        XCTAssertEqual(try store.incomingActionRows(from: bob.identity), 0, "forgotten with the conversation")
        let again = try fromBob("hello again")
        conversation.received([action(.edit(body: "hello again!"), on: again.id, sequence: 50)], on: link)
        XCTAssertEqual(try store.message(id: again.id, sender: bob.identity)?.body, "hello again!", "room again")
    }

    /// A count the store cannot give takes nothing: none of the read is stored or
    /// acknowledged and the session closes (the sender keeps them queued).
    func testAQuotaCountTheStoreCannotGiveTakesNoAction() throws {
        let his = try fromBob("hi")
        let quota = quota(rows: 100)
        quota.store = UncountableQuotaStore(store)
        host.quota = quota
        let conversation = driver()
        let link = host.connect(bob.identity)
        conversation.received([action(.edit(body: "hi all"), on: his.id, sequence: 2)], on: link)
        XCTAssertEqual(link.acks, [])
        XCTAssertEqual(link.closed, DirectMessageDriverCloseText.receiverStorageFailure)
        XCTAssertEqual(try store.incomingActionRows(from: bob.identity), 0)
        XCTAssertEqual(try store.message(id: his.id, sender: bob.identity)?.body, "hi")
    }

    /// At the sender: a change the peer refused is not offered again on this session
    /// (the pump would otherwise resend it at once, for as long as the session lasts); it
    /// stays queued and goes with the next session.
    func testAChangeThePeerRefusedIsNotResentOnTheSameSession() throws {
        let mine = try toBob("my words")
        _ = try store.markDelivered([mine.id], by: bob.identity, at: 2, journal: nil)
        let conversation = driver()
        let link = host.connect(bob.identity)
        _ = try conversation.perform(.edit(body: "my words, corrected"), on: mine)
        conversation.pumpActions(link, peer: bob.identity)
        XCTAssertEqual(link.actions.count, 1)
        let id = link.actions[0].id
        _ = host.withWindow(of: link) { $0.refuse([id]) }
        conversation.pumpActions(link, peer: bob.identity)
        XCTAssertEqual(link.actions.count, 1, "not offered again on this session")
        XCTAssertEqual(try store.queuedActionCount(to: .peer(bob.identity)), 1, "still queued")
        XCTAssertEqual(host.withWindow(of: link) { $0.freeSlots }, SendWindowLimits().maxCount, "its slot is free")

        let next = host.connect(bob.identity)
        conversation.pumpActions(next, peer: bob.identity)
        XCTAssertEqual(next.actions.map(\.id), [id], "offered again on the next session")
    }

    /// A peer reaches only its own conversation with us: bob cannot react to, edit or
    /// delete what carol wrote me or what I wrote carol (it is as unknown to him as a
    /// message that does not exist), whatever ids he learnt.
    func testAPeerCannotTouchAnotherConversation() throws {
        let carol = try TestIdentity(name: "carol")
        let fromCarol = try store.storeIncoming(
            [ReceivedChat(id: .random(), sequence: 1, createdAt: 1, body: "carol's words")], from: carol.identity,
            to: me.identity, at: 1, journal: nil)[0].message
        let toCarol = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: carol.identity, body: "for carol", createdAt: 1)],
            sender: me.identity)[0]
        let conversation = driver()
        let link = host.connect(bob.identity)
        let thumbs = try Reaction("👍")
        let attempts = [
            action(.reaction(thumbs, added: true), on: fromCarol.id, sequence: 5),
            action(.reaction(thumbs, added: true), on: toCarol.id, sequence: 6),
            action(.edit(body: "rewritten"), on: fromCarol.id, sequence: 7),
            action(.delete, on: toCarol.id, sequence: 8)
        ]
        conversation.received(attempts, on: link)
        XCTAssertEqual(link.acks, [attempts.map(\.id)], "acknowledged, so not sent again")
        XCTAssertTrue(host.updated.isEmpty)
        XCTAssertFalse(
            try store.actionTargetFacts(fromCarol, author: bob.identity, reaction: thumbs.text).hasThisReaction)
        XCTAssertFalse(
            try store.actionTargetFacts(toCarol, author: bob.identity, reaction: thumbs.text).hasThisReaction)
        XCTAssertEqual(try store.message(id: fromCarol.id, sender: carol.identity)?.body, "carol's words")
        XCTAssertNil(try store.message(id: toCarol.id, sender: me.identity)?.deletedAt)
    }

    /// A removed member's reaction to a room message is refused, whether it names the
    /// room or poses as a direct-conversation change; while a member, the same reaction
    /// applies.
    func testAReactionFromAMemberWhoLeftTheRoomIsRefused() throws {
        let (roomID, withBob, bobRemoved) = try room()
        let target = try store.enqueueRoomMessage(
            id: .random(), room: roomID, body: "to the room", createdAt: 1, sender: me.identity,
            members: [bob.identity])
        let conversation = driver()
        let link = host.connect(bob.identity)
        let thumbs = try Reaction("👍")
        func hasBobsReaction() throws -> Bool {
            try store.actionTargetFacts(target, author: bob.identity, reaction: thumbs.text).hasThisReaction
        }

        host.rooms[roomID] = bobRemoved
        let asMember = action(.reaction(thumbs, added: true), on: target.id, room: roomID)
        let asDirect = action(.reaction(thumbs, added: true), on: target.id, sequence: 6)
        conversation.received([asMember, asDirect], on: link)
        XCTAssertEqual(link.acks, [[asMember.id, asDirect.id]])
        XCTAssertFalse(try hasBobsReaction(), "a removed member's reaction is not applied")
        XCTAssertTrue(host.updated.isEmpty)

        host.rooms[roomID] = withBob
        conversation.received(
            [action(.reaction(thumbs, added: true), on: target.id, sequence: 7, room: roomID)], on: link)
        XCTAssertTrue(try hasBobsReaction(), "a member's reaction applies")
        XCTAssertEqual(host.updated.map(\.id), [target.id])
    }

    /// The store fails: nothing is acknowledged (the sender keeps the actions queued) and
    /// the session is closed.
    func testAStoreThatCannotTakeActionsClosesWithoutAcknowledging() throws {
        let his = try fromBob("his words")
        let conversation = driver()
        let link = host.connect(bob.identity)
        try store.close()
        conversation.received([action(.edit(body: "again"), on: his.id)], on: link)
        XCTAssertTrue(link.acks.isEmpty)
        XCTAssertEqual(link.closed, "receiver storage failure")
    }

    // MARK: The user's own changes

    /// The user may not edit bob's message, nor act in a room it was removed from; nothing
    /// is queued then. Its own edit is applied, queued and sent at once on bob's session,
    /// and bob's ack takes it off the outbox (never sent again).
    func testOwnChangesAreJudgedQueuedSentAndAcknowledged() throws {
        let conversation = driver()
        let his = try fromBob("his words")
        XCTAssertThrowsError(try conversation.perform(.edit(body: "mine now"), on: his)) { error in
            guard case ConversationError.refused(.notAuthor, _) = error else { return XCTFail("\(error)") }
        }
        let (roomID, _, bobRemoved) = try room()
        // Seen from bob's side: I am bob's node here, removed from the room.
        let roomMessage = try store.enqueueRoomMessage(
            id: .random(), room: roomID, body: "in the room", createdAt: 1, sender: me.identity,
            members: [bob.identity])
        host.me = bob.identity
        host.rooms[roomID] = bobRemoved
        XCTAssertThrowsError(try conversation.perform(.reaction(try Reaction("👍"), added: true), on: roomMessage)) {
            guard case ConversationError.refused(.notRoomMember, _) = $0 else { return XCTFail("\($0)") }
        }
        host.me = me.identity
        XCTAssertEqual(try store.queuedActionCount(to: .peer(bob.identity)), 0)
        XCTAssertEqual(try store.queuedActionCount(to: .room(roomID)), 0)

        let mine = try toBob("my words")
        let link = host.connect(bob.identity)
        let updated = try conversation.perform(.edit(body: "my better words"), on: mine)
        XCTAssertEqual(updated.body, "my better words")
        XCTAssertEqual(host.updated.map(\.id), [mine.id])
        XCTAssertEqual(host.pumped, 1, "bob's session was pumped")
        conversation.pumpActions(link, peer: bob.identity)
        XCTAssertTrue(link.actions.isEmpty, "an edit waits for the message it changes")
        _ = try store.markDelivered([mine.id], by: bob.identity, at: 2, journal: nil)
        conversation.pumpActions(link, peer: bob.identity)
        XCTAssertEqual(link.actions.map(\.target), [mine.id])
        let sentID = try XCTUnwrap(link.actions.first?.id)
        conversation.pumpActions(link, peer: bob.identity)
        XCTAssertEqual(link.actions.count, 1, "in flight: not sent twice")
        _ = host.withWindow(of: link) { $0.acknowledge([sentID]) }
        conversation.actionsAcknowledged([sentID], by: bob.identity)
        conversation.pumpActions(link, peer: bob.identity)
        XCTAssertEqual(link.actions.count, 1, "acknowledged: never sent again")
        XCTAssertEqual(try store.queuedActionCount(to: .peer(bob.identity)), 0)
    }

    // MARK: Read receipts

    /// Reading bob's messages sends him one receipt naming them, once: a second flush (a
    /// new session, another read) sends nothing more. With receipts off none is owed.
    func testReadReceiptsAreSentOnce() throws {
        let conversation = driver()
        let link = host.connect(bob.identity)
        let first = try fromBob("one", sequence: 1)
        let second = try fromBob("two", sequence: 2)
        let (marked, unread) = try conversation.markRead(bob.identity, upTo: nil)
        XCTAssertEqual(marked, 2)
        XCTAssertEqual(unread, 0)
        XCTAssertEqual(link.receipts.map(Set.init), [[first.id, second.id]])
        conversation.sendPendingReadReceipts(link)
        _ = try conversation.markRead(bob.identity, upTo: nil)
        XCTAssertEqual(link.receipts.count, 1, "sent once")

        conversation.sendsReadReceipts = false
        _ = try fromBob("three", sequence: 3)
        XCTAssertEqual(try conversation.markRead(bob.identity, upTo: nil).marked, 1)
        conversation.sendsReadReceipts = true
        conversation.sendPendingReadReceipts(link)
        XCTAssertEqual(link.receipts.count, 1, "read while receipts were off: none owed")
    }

    /// Bob's receipt marks our message read by him (`message.read`); a receipt from a
    /// connection that is not his session is ignored.
    func testAReceiptFromThePeerMarksOurMessageRead() throws {
        let conversation = driver()
        let mine = try toBob("read me")
        // The node takes a receipt as the ack first (the reader stored the message).
        _ = try store.markDelivered([mine.id], by: bob.identity, at: 2, journal: nil)
        let link = host.connect(bob.identity)
        let stale = ConversationLink(peer: bob.identity)
        conversation.readReceiptsReceived([mine.id], on: stale)
        XCTAssertTrue(host.read.isEmpty, "not the peer's session")
        XCTAssertNil(try store.message(id: mine.id, sender: me.identity)?.readAt)
        conversation.readReceiptsReceived([mine.id], on: link)
        XCTAssertEqual(host.read, [mine.id])
        XCTAssertNotNil(try store.message(id: mine.id, sender: me.identity)?.readAt)
    }

    // MARK: Status

    /// The status line is kept, told to every connected peer that understands it, read
    /// again at start and announced at a session's start.
    func testTheStatusLineIsKeptToldAndAnnounced() throws {
        let conversation = driver()
        let link = host.connect(bob.identity)
        let old = host.connect(try TestIdentity(name: "old").identity)
        old.remoteFeatures = []
        let (status, told) = try conversation.setStatus("in the lab")
        XCTAssertEqual(status.text, "in the lab")
        XCTAssertEqual(told, 1)
        XCTAssertEqual(link.statuses, ["in the lab"])
        XCTAssertTrue(old.statuses.isEmpty)

        let restarted = driver()
        restarted.loadOwnStatus()
        XCTAssertEqual(restarted.ownStatus.text, "in the lab")
        let next = ConversationLink(peer: bob.identity)
        restarted.announceStatus(on: next)
        XCTAssertEqual(next.statuses, ["in the lab"])
        XCTAssertThrowsError(try restarted.setStatus(String(repeating: "x", count: 10_000)))
    }
}

/// One session's connection that records what the conversation driver gives it.
final class ConversationLink: MessageLink {
    let peer: IdentityPublicKey
    var isWritable = true
    var remoteFeatures: ProtocolFeatures = .supported
    var remoteIdentityKey: IdentityPublicKey? { peer }
    private(set) var actions: [MessageActionRecord] = []
    private(set) var acks: [[MessageID]] = []
    private(set) var receipts: [[MessageID]] = []
    private(set) var statuses: [String] = []
    private(set) var refused: [(RefusalReason, [MessageID])] = []
    private(set) var closed: String?

    init(peer: IdentityPublicKey) { self.peer = peer }

    func send(_ record: AppRecord) {
        switch record {
        case .messageAction(let a): actions.append(a)
        case .ack(let ids): acks.append(ids)
        case .readReceipt(let ids): receipts.append(ids)
        case .status(let s): statuses.append(s.text)
        case let .refused(reason, ids): refused.append((reason, ids))
        default: break
        }
    }

    func close(reason: CloseReason, text: String) { closed = text }
}

/// Stands in for the node: one session per connected peer with its window, room states
/// the test sets, and the events the driver emits.
final class ConversationTestHost: ConversationHost {
    typealias Link = ConversationLink
    var me: IdentityPublicKey
    var links: [IdentityPublicKey: ConversationLink] = [:]
    var windows: [ObjectIdentifier: SendWindow] = [:]
    var rooms: [RoomID: RoomState] = [:]
    var updated: [StoredMessage] = []
    var read: [MessageID] = []
    var pumped = 0
    var deletes = 0
    /// The receive quota (a real driver over the test's store); nil takes everything.
    var quota: ReceiveQuotaDriver?

    init(me: IdentityPublicKey) { self.me = me }

    func connect(_ peer: IdentityPublicKey) -> ConversationLink {
        let link = ConversationLink(peer: peer)
        links[peer] = link
        windows[ObjectIdentifier(link)] = SendWindow(limits: SendWindowLimits())
        return link
    }

    var myIdentityKey: IdentityPublicKey { me }
    var sessionPeers: [IdentityPublicKey] { Array(links.keys) }
    func activePeer(of link: ConversationLink) -> IdentityPublicKey? { links[link.peer] === link ? link.peer : nil }
    func activeConnection(for peer: IdentityPublicKey) -> ConversationLink? { links[peer] }
    func withWindow<R>(of link: ConversationLink, _ body: (inout SendWindow) -> R) -> R? {
        guard windows[ObjectIdentifier(link)] != nil else { return nil }
        return body(&windows[ObjectIdentifier(link)]!)
    }
    func pump(_ link: ConversationLink) { pumped += 1 }
    func roomState(_ room: RoomID) throws(StoreError) -> RoomState? { rooms[room] }
    func signRoomChange(_ action: MessageActionRecord.Action, of target: MessageID, id: MessageID, room: RoomID) {}
    func signedRoomChangeForSending(id: MessageID, to peer: IdentityPublicKey, on link: ConversationLink)
        -> SignedRoomMessage?
    { nil }
    func deleteApplied() { deletes += 1 }
    func judgeActionsByQuota(_ actions: [(id: MessageID, size: Int)], from sender: IdentityPublicKey)
        throws(StoreError) -> [(RefusalReason, [MessageID])]
    {
        try quota?.judge(actions, from: sender).refused ?? []
    }
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: ConversationLink) {
        for (reason, ids) in refused { link.send(.refused(reason, ids)) }
    }
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey) { quota?.stored(bodies, from: sender) }
    func emit(_ e: NodeEvent) {
        switch e {
        case .messageUpdated(let m): updated.append(m)
        case .messageRead(let m): read.append(m.id)
        default: break
        }
    }
}
