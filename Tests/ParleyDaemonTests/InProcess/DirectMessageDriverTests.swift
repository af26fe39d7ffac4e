import Foundation
import NIOCore
import NIOEmbedded
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The one-to-one message path's driver on a virtual-time loop with a real store (SQLite
/// in a temporary directory): a host that stands in for the node, and links that record
/// what the driver sends. Send admission, the pump within the window and in the lanes'
/// order, acknowledgements marking deliveries, and receiving: stored, acknowledged only
/// once durable, and never acknowledged when the store fails.
final class DirectMessageDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var me: TestIdentity!
    var bob: TestIdentity!
    var host: RecordingHost!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-directmessages")
        store = try Store(directory: directory)
        me = try TestIdentity(name: "me")
        bob = try TestIdentity(name: "bob")
        host = RecordingHost()
    }

    override func tearDownWithError() throws {
        host = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func driver(
        store: (any MessageStore)? = nil, maxQueuedPerPeer: Int = NodeLimits.maxQueuedPerPeer
    ) -> DirectMessageDriver<RecordingHost> {
        let d = DirectMessageDriver<RecordingHost>(
            store: store ?? self.store, me: me.identity, loop: loop, clock: clock, log: testLogger(),
            admission: SendAdmission(maxQueuedPerPeer: maxQueuedPerPeer))
        d.host = host
        return d
    }

    private func chat(_ n: UInt64, _ body: String) -> ChatRecord {
        ChatRecord(id: .random(), sequence: n, createdAt: 1, body: body)
    }

    // MARK: Admission

    /// Each item fails alone for its own reason; the queue bound counts what the store
    /// already holds for the peer (read once) and what the batch admitted before it.
    func testSendAdmitsOrRefusesEachItemAndCountsTheStoredQueue() throws {
        _ = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob.identity, body: "earlier", createdAt: 1)],
            sender: me.identity)
        let messages = driver(maxQueuedPerPeer: 3)
        var blocked = try TestIdentity(name: "carol").pinnedRecord()
        blocked.trust = .blocked
        let bobRecord = bob.pinnedRecord()
        let big = String(repeating: "x", count: WireLimits.maxBodyBytes + 1)
        let results = messages.send([
            (bobRecord, "one"), (bobRecord, ""), (blocked, "hi"), (bobRecord, big), (bobRecord, "two"),
            (bobRecord, "three")
        ])
        XCTAssertEqual(try results[0].get().body, "one")
        XCTAssertEqual(try results[4].get().body, "two")
        func failure(_ r: Result<StoredMessage, NodeError>) -> NodeError? {
            if case .failure(let e) = r { return e } else { return nil }
        }
        guard case .emptyBody = failure(results[1]) else { return XCTFail("\(results[1])") }
        guard case .peerBlocked = failure(results[2]) else { return XCTFail("\(results[2])") }
        guard case .bodyTooLarge(WireLimits.maxBodyBytes + 1) = failure(results[3]) else {
            return XCTFail("\(results[3])")
        }
        guard case .queueFull(_, 3) = failure(results[5]) else { return XCTFail("\(results[5])") }
        XCTAssertEqual(try store.pendingRecipients(), [bob.identity: 3], "only the admitted ones were stored")
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 3)
        XCTAssertEqual(host.wroteTo, [bob.identity], "gossip is told who was written to")
    }

    /// The store cannot count what is already queued: nothing is admitted past a bound
    /// nobody could check (fail closed), nothing is stored, and each send says what to do.
    func testSendRefusesEverythingWhenTheQueuedCountFails() throws {
        _ = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob.identity, body: "earlier", createdAt: 1)],
            sender: me.identity)
        let failing = CountingMessageStore(store)
        failing.failPendingRecipients = true
        let messages = driver(store: failing, maxQueuedPerPeer: 1)
        let results = messages.send([(bob.pinnedRecord(), "one"), (bob.pinnedRecord(), "two")])
        for r in results {
            guard case .failure(.outboxUncounted(let e)) = r else { return XCTFail("\(r)") }
            XCTAssertEqual(e, .io(path: store.path, reason: "disk I/O error (test)"))
            XCTAssertTrue(
                NodeError.outboxUncounted(e).description.contains("nothing was queued"),
                NodeError.outboxUncounted(e).description)
        }
        XCTAssertEqual(try store.pendingRecipients(), [bob.identity: 1], "nothing more was stored")
        XCTAssertTrue(host.wroteTo.isEmpty)
        failing.failPendingRecipients = false
        guard case .failure(.queueFull) = messages.send([(bob.pinnedRecord(), "three")])[0] else {
            return XCTFail("once the store counts again, the bound holds")
        }
    }

    // MARK: The pump

    /// A session with a window of two: two chats go out, in sequence, between the room
    /// operations and the actions and room messages; each ack marks its message delivered
    /// (`message.delivered`), frees a slot and the next one goes out.
    func testThePumpSendsWithinTheWindowAndAcksMarkDeliveries() throws {
        let messages = driver()
        let link = host.connect(bob.identity, window: SendWindowLimits(maxCount: 2))
        let sent = try (1...4).map { n in
            try messages.send([(bob.pinnedRecord(), "m\(n)")])[0].get()
        }
        XCTAssertEqual(link.chats.map(\.body), ["m1", "m2"], "the window holds two")
        XCTAssertEqual(link.chats.map(\.sequence), sent[0..<2].map { UInt64($0.sequence) })
        let firstPump = Array(host.log.prefix(5))
        XCTAssertEqual(firstPump, ["roomOperations", "chat m1", "actions", "roomMessages", "roomOperations"])

        messages.acknowledged([sent[0].id], on: link)
        loop.advanceTime(by: DeliveryMarkFold.flushDelay)  // no transaction to ride on: the marks' timer
        XCTAssertEqual(try store.message(id: sent[0].id)?.state, .delivered)
        XCTAssertEqual(try store.message(id: sent[1].id)?.state, .queued)
        XCTAssertEqual(host.delivered, [sent[0].id])
        XCTAssertEqual(link.chats.map(\.body), ["m1", "m2", "m3"], "the freed slot took the next")
        XCTAssertEqual(host.acknowledgedLanes.last?.sync, [sent[0].id], "room sync sees every acked id")
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 3)

        messages.acknowledged([sent[1].id, sent[2].id], on: link)
        XCTAssertEqual(link.chats.map(\.body), ["m1", "m2", "m3", "m4"])
        messages.acknowledged([sent[3].id], on: link)
        loop.advanceTime(by: DeliveryMarkFold.flushDelay)
        XCTAssertEqual(try store.pendingRecipients(), [:])
        XCTAssertEqual(host.delivered, sent.map(\.id))
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 0)
    }

    // MARK: Delivery marks ride on the next transaction (issue 32 part 10)

    /// One in flight: the ack's mark waits, and the next send's transaction writes it with
    /// the new message (one transaction, not two); `message.delivered` only after that
    /// commit, and the timer is not needed any more.
    func testAnAcknowledgedMarkRidesOnTheNextSendsTransaction() throws {
        let messages = driver()
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        let before = store.committedWriteTransactions
        messages.acknowledged([first.id], on: link)
        XCTAssertEqual(store.committedWriteTransactions, before, "the ack alone writes nothing")
        XCTAssertEqual(try store.message(id: first.id)?.state, .queued)
        XCTAssertEqual(host.delivered, [], "no message.delivered before the mark is committed")
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 1)

        let second = try messages.send([(bob.pinnedRecord(), "m2")])[0].get()
        XCTAssertEqual(store.committedWriteTransactions, before + 1, "the send carried the mark")
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
        XCTAssertEqual(try store.message(id: second.id)?.state, .queued)
        XCTAssertEqual(host.delivered, [first.id])
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 1)
        loop.advanceTime(by: DeliveryMarkFold.flushDelay * 4)
        XCTAssertEqual(store.committedWriteTransactions, before + 1, "nothing was left for the timer")
        XCTAssertEqual(host.delivered, [first.id], "reported once")
    }

    /// A message from the peer arriving first carries the mark instead; the delivery is
    /// reported before the new message, the order of their journal rows.
    func testAMarkRidesOnTheNextReceivedMessagesTransactionAndIsReportedFirst() throws {
        host.journals = true
        let messages = driver()
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        messages.acknowledged([first.id], on: link)
        let before = store.committedWriteTransactions
        messages.received([chat(1, "reply")], on: link)
        XCTAssertEqual(store.committedWriteTransactions, before + 1, "one transaction: the reply and the mark")
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
        XCTAssertEqual(host.emitted, ["delivered \(first.id.hex)", "received reply"])
        let rows = try store.events(after: 0, through: 10, limit: 10).map(\.event.method)
        XCTAssertEqual(rows, [ControlEvent.messageDelivered, ControlEvent.messageReceived])
    }

    /// Nothing else written: the mark is written alone once `DeliveryMarkFold.flushDelay`
    /// has passed, not before.
    func testAMarkWithNothingToRideOnIsWrittenAloneAfterTheFlushDelay() throws {
        let messages = driver()
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        let before = store.committedWriteTransactions
        messages.acknowledged([first.id], on: link)
        loop.advanceTime(by: DeliveryMarkFold.flushDelay - .milliseconds(1))
        XCTAssertEqual(try store.message(id: first.id)?.state, .queued)
        XCTAssertEqual(host.delivered, [])
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
        XCTAssertEqual(store.committedWriteTransactions, before + 1)
        XCTAssertEqual(host.delivered, [first.id])
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 0)
    }

    /// The timer is armed once and not cancelled when a transaction carries the marks: a
    /// mark queued later, just before it fires, still waits its whole delay (for the next
    /// send to carry it), then is written alone.
    func testAMarkQueuedJustBeforeTheTimerFiresWaitsItsWholeDelay() throws {
        let messages = driver()
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        messages.acknowledged([first.id], on: link)  // arms the timer at 0
        loop.advanceTime(by: .milliseconds(1))
        let second = try messages.send([(bob.pinnedRecord(), "m2")])[0].get()  // carries m1's mark
        XCTAssertEqual(host.delivered, [first.id])
        let quarter = DeliveryMarkFold.flushDelay.nanoseconds / 4
        loop.advanceTime(by: .nanoseconds(3 * quarter - 1_000_000))
        messages.acknowledged([second.id], on: link)  // at 3/4 of the delay
        let before = store.committedWriteTransactions
        loop.advanceTime(by: .nanoseconds(quarter))  // the timer fires: m2's mark is young
        XCTAssertEqual(store.committedWriteTransactions, before, "not written before its own delay")
        XCTAssertEqual(try store.message(id: second.id)?.state, .queued)
        loop.advanceTime(by: .nanoseconds(3 * quarter - 1))
        XCTAssertEqual(try store.message(id: second.id)?.state, .queued)
        loop.advanceTime(by: .nanoseconds(1))
        XCTAssertEqual(try store.message(id: second.id)?.state, .delivered, "written alone at its delay")
        XCTAssertEqual(store.committedWriteTransactions, before + 1)
        XCTAssertEqual(host.delivered, [first.id, second.id])
    }

    /// An edit, delete or reaction waits until its target is delivered: once a waiting
    /// mark is committed (by the timer, or by a received message's transaction) the
    /// peer's session is pumped again, so what waited for the delivery goes out.
    func testTheSessionIsPumpedAgainOnceAWaitingMarkIsCommitted() throws {
        let messages = driver()
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        messages.acknowledged([first.id], on: link)
        host.log.removeAll()
        loop.advanceTime(by: DeliveryMarkFold.flushDelay)
        XCTAssertEqual(host.delivered, [first.id])
        XCTAssertTrue(host.log.contains("actions"), "pumped after the timer's mark: \(host.log)")

        let second = try messages.send([(bob.pinnedRecord(), "m2")])[0].get()
        messages.acknowledged([second.id], on: link)
        host.log.removeAll()
        messages.received([chat(1, "reply")], on: link)
        XCTAssertEqual(host.delivered, [first.id, second.id])
        XCTAssertTrue(host.log.contains("actions"), "pumped after the carried mark: \(host.log)")
    }

    /// Acks naming many ids (a peer may name ids it never got, or ids of earlier sessions)
    /// are not held without bound: at `DeliveryMarkFold.maxPendingIDs` they are written at once.
    func testManyWaitingAcknowledgedIdsAreWrittenAtOnce() throws {
        let counting = CountingMessageStore(store)
        let messages = driver(store: counting)
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        let unknown = (1..<DeliveryMarkFold.maxPendingIDs).map { _ in MessageID.random() }
        messages.acknowledged(Array(unknown.prefix(WireLimits.maxAcksPerRecord)), on: link)
        XCTAssertEqual(counting.markFlushes, 0)
        messages.acknowledged(Array(unknown.dropFirst(WireLimits.maxAcksPerRecord)) + [first.id], on: link)
        XCTAssertEqual(counting.markFlushes, 1, "written at the bound, without waiting for the timer")
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
        XCTAssertEqual(host.delivered, [first.id])
        XCTAssertFalse(store.hasPendingDeliveryMarks)
    }

    /// A transaction that carried marks and failed leaves them waiting (its rollback undid
    /// them, and nothing is reported); the timer writes them.
    func testMarksCarriedByAFailedTransactionWaitAgain() throws {
        let counting = CountingMessageStore(store)
        let messages = driver(store: counting)
        let link = host.connect(bob.identity)
        let first = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        messages.acknowledged([first.id], on: link)
        counting.duplicateNextEnqueue = true  // the enqueue fails at its insert, after the marks
        let failed = messages.send([(bob.pinnedRecord(), "m2")])[0]
        guard case .failure(.storage) = failed else { return XCTFail("\(failed)") }
        XCTAssertEqual(try store.message(id: first.id)?.state, .queued, "the rollback undid the mark")
        XCTAssertTrue(store.hasPendingDeliveryMarks)
        XCTAssertEqual(host.delivered, [])
        loop.advanceTime(by: DeliveryMarkFold.flushDelay)
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
        XCTAssertEqual(host.delivered, [first.id])
        XCTAssertEqual(messages.ledger.queuedCount(for: bob.identity), 0)
    }

    /// A session that had sent everything takes new messages as stored (no read-back of
    /// the rows just written); a backlog queued before the driver knew it is read, and so
    /// is the first send after it (the driver does not know the backlog's newest sequence).
    func testACaughtUpSessionIsNotReadBackButABacklogIs() throws {
        _ = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob.identity, body: "backlog", createdAt: 1)],
            sender: me.identity)
        let counting = CountingMessageStore(store)
        let messages = driver(store: counting)
        let link = host.connect(bob.identity)
        messages.pump(link)
        XCTAssertEqual(counting.pendingReads, 1, "a backlog the driver did not queue: read")
        XCTAssertEqual(link.chats.map(\.body), ["backlog"])
        _ = try messages.send([(bob.pinnedRecord(), "new 1")])[0].get()
        XCTAssertEqual(counting.pendingReads, 2, "the backlog's newest sequence was not known: read")
        for n in 2...3 { _ = try messages.send([(bob.pinnedRecord(), "new \(n)")])[0].get() }
        XCTAssertEqual(link.chats.map(\.body), ["backlog", "new 1", "new 2", "new 3"])
        XCTAssertEqual(counting.pendingReads, 2, "the session was caught up: sent as stored")
        messages.pump(link)
        XCTAssertEqual(counting.pendingReads, 2, "nothing unsent: no query either")
    }

    /// No session for the peer: queued, nothing sent; the pump on the session when it
    /// comes up sends it.
    func testAMessageQueuedWhileOfflineGoesOutWhenTheSessionComesUp() throws {
        let messages = driver()
        let sent = try messages.send([(bob.pinnedRecord(), "later")])[0].get()
        XCTAssertEqual(try store.message(id: sent.id)?.state, .queued)
        let link = host.connect(bob.identity)
        XCTAssertTrue(link.chats.isEmpty)
        messages.pump(link)
        XCTAssertEqual(link.chats.map(\.id), [sent.id])
    }

    // MARK: Receiving

    /// Stored at once, acknowledged only once the store's commit is on disk (group
    /// commit held by the test), and announced once.
    func testReceivedChatsAreStoredThenAcknowledgedOnlyOnceDurable() throws {
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { held.hop($0) }, failed: { _ in XCTFail("failed") })
        let messages = driver()
        let link = host.connect(bob.identity)
        let chats = [chat(1, "hello"), chat(2, "again")]
        messages.received(chats, on: link)
        XCTAssertEqual(try store.message(id: chats[0].id, sender: bob.identity)?.body, "hello")
        XCTAssertTrue(link.acks.isEmpty, "no ack before the sync")
        XCTAssertEqual(host.received.map(\.body), ["hello", "again"])
        held.release()
        XCTAssertEqual(link.acks, [chats.map(\.id)])
        messages.received([chats[0]], on: link)
        XCTAssertEqual(host.received.count, 2, "a resend is stored once and announced once")
        held.gate.signal()
    }

    /// Issue 32 part 12: the sync that a received batch releases runs the ack after the
    /// waiters registered later (the control connections' held `message.received` lines,
    /// registered by the journal's flush after this call): this node's people see the message
    /// before the ack wakes the sender.
    func testTheAckRunsAfterTheWaitersOfTheSameSyncRegisteredLater() throws {
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { held.hop($0) }, failed: { _ in XCTFail("failed") })
        let messages = driver()
        let link = host.connect(bob.identity)
        messages.received([chat(1, "hello")], on: link)
        var order: [String] = []
        store.whenDurable { order.append("line (acks so far: \(link.acks.count))") }
        held.release()
        XCTAssertEqual(order, ["line (acks so far: 0)"])
        XCTAssertEqual(link.acks.count, 1)
        held.gate.signal()
    }

    /// Issue 32 part 12: a sender's sync is asked for only once the records it stored were
    /// written to their session (`Store.holdingSyncRequests`), and then for that commit.
    func testTheSendersSyncIsAskedForAfterItsRecordsAreWritten() throws {
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { held.hop($0) }, failed: { _ in XCTFail("failed") })
        let messages = driver()
        let link = host.connect(bob.identity)
        let store = self.store!
        var asked: [UInt64] = []
        link.onFlush = { asked.append(store.syncRequestedThrough) }
        _ = try messages.send([(bob.pinnedRecord(), "m1")])[0].get()
        XCTAssertEqual(link.chats.map(\.body), ["m1"])
        XCTAssertEqual(asked, [0], "written before the sync was asked for")
        let ticket = try XCTUnwrap(store.unsyncedCommit)
        XCTAssertEqual(store.syncRequestedThrough, ticket, "asked for once the records were written")
        var answered = false
        store.whenDurable { answered = true }
        held.release()
        XCTAssertTrue(answered, "the held request reached the syncer")
        held.gate.signal()
    }

    /// The store fails: nothing is acknowledged (the sender keeps the messages queued and
    /// sends them again), nothing is announced, and the session is closed.
    func testAStoreFailureOnReceiveClosesWithoutAcknowledging() throws {
        let failing = CountingMessageStore(store)
        failing.failStoreIncoming = true
        let messages = driver(store: failing)
        let link = host.connect(bob.identity)
        messages.received([chat(1, "lost?")], on: link)
        loop.run()
        XCTAssertTrue(link.acks.isEmpty)
        XCTAssertTrue(host.received.isEmpty)
        XCTAssertEqual(link.closed, "receiver storage failure")
    }

    /// The quota cannot count: nothing is stored, acknowledged, refused or announced, and
    /// the session is closed (the sender keeps them queued), never "taken unchecked".
    func testAQuotaThatCannotCountTakesNothingAndCloses() throws {
        let messages = driver()
        let link = host.connect(bob.identity)
        host.quotaCountFails = true
        let chats = [chat(1, "uncounted")]
        messages.received(chats, on: link)
        loop.run()
        XCTAssertTrue(link.acks.isEmpty)
        XCTAssertTrue(link.refused.isEmpty)
        XCTAssertTrue(host.received.isEmpty)
        XCTAssertNil(try store.message(id: chats[0].id, sender: bob.identity))
        XCTAssertEqual(link.closed, "receiver storage failure")
    }

    /// What the receive quota refuses is refused on the wire, not stored, not acked.
    func testTheQuotaIsJudgedBeforeTheStore() throws {
        let messages = driver()
        let link = host.connect(bob.identity)
        let chats = [chat(1, "kept"), chat(2, "over")]
        host.refuse = [chats[1].id]
        messages.received(chats, on: link)
        XCTAssertEqual(link.refused, [chats[1].id])
        XCTAssertEqual(link.acks, [[chats[0].id]])
        XCTAssertNil(try store.message(id: chats[1].id, sender: bob.identity))
    }

    /// Records on a connection that is not the peer's session are ignored.
    func testRecordsOnAnInactiveConnectionAreIgnored() throws {
        let messages = driver()
        let stale = RecordingLink(peer: bob.identity, log: host)
        messages.received([chat(1, "stale")], on: stale)
        XCTAssertTrue(stale.acks.isEmpty)
        XCTAssertTrue(host.received.isEmpty)
    }
}

/// One session's connection that records what the driver gives it.
final class RecordingLink: MessageLink {
    let peer: IdentityPublicKey
    private weak var log: RecordingHost?
    var isWritable = true
    var remoteFeatures: ProtocolFeatures = .supported
    var remoteIdentityKey: IdentityPublicKey? { peer }
    private(set) var chats: [ChatRecord] = []
    private(set) var acks: [[MessageID]] = []
    private(set) var refused: [MessageID] = []
    private(set) var closed: String?

    init(peer: IdentityPublicKey, log: RecordingHost) {
        self.peer = peer
        self.log = log
    }

    func send(_ record: AppRecord) {
        switch record {
        case .chat(let c):
            chats.append(c)
            log?.log.append("chat \(c.body)")
        case .ack(let ids): acks.append(ids)
        case .refused(_, let ids): refused += ids
        default: break
        }
    }

    var onFlush: (() -> Void)?
    func flushNow() { onFlush?() }

    func close(reason: CloseReason, text: String) { closed = text }
}

/// Stands in for the node: one session per connected peer with its window, the other
/// lanes as entries in `log`, a receive quota that refuses what the test says.
final class RecordingHost: DirectMessageHost {
    typealias Link = RecordingLink
    var links: [IdentityPublicKey: RecordingLink] = [:]
    var windows: [ObjectIdentifier: SendWindow] = [:]
    var log: [String] = []
    var refuse: Set<MessageID> = []
    /// The receive quota's count fails (the store cannot say what the sender keeps).
    var quotaCountFails = false
    var wroteTo: [IdentityPublicKey] = []
    var received: [StoredMessage] = []
    var delivered: [MessageID] = []
    var acknowledgedLanes: [(actions: [MessageID], room: [MessageID], sync: [MessageID])] = []

    func connect(_ peer: IdentityPublicKey, window: SendWindowLimits = SendWindowLimits()) -> RecordingLink {
        let link = RecordingLink(peer: peer, log: self)
        links[peer] = link
        windows[ObjectIdentifier(link)] = SendWindow(limits: window)
        return link
    }

    func activePeer(of link: RecordingLink) -> IdentityPublicKey? { links[link.peer] === link ? link.peer : nil }
    func activeConnection(for peer: IdentityPublicKey) -> RecordingLink? { links[peer] }
    func withWindow<R>(of link: RecordingLink, _ body: (inout SendWindow) -> R) -> R? {
        guard windows[ObjectIdentifier(link)] != nil else { return nil }
        return body(&windows[ObjectIdentifier(link)]!)
    }
    func promote(_ peer: IdentityPublicKey) {}
    func pumpRoomOperations(_ link: RecordingLink, peer: IdentityPublicKey) { log.append("roomOperations") }
    func pumpActions(_ link: RecordingLink, peer: IdentityPublicKey) { log.append("actions") }
    func pumpRoomMessages(_ link: RecordingLink, peer: IdentityPublicKey) { log.append("roomMessages") }
    func actionsAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        acknowledgedLanes.append((ids, [], []))
    }
    func roomTrafficAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        acknowledgedLanes[acknowledgedLanes.count - 1].room = ids
    }
    func roomSyncAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        acknowledgedLanes[acknowledgedLanes.count - 1].sync = ids
    }
    func judgeByQuota(_ chats: [ChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [ChatRecord], refused: [(RefusalReason, [MessageID])])
    {
        if quotaCountFails { throw StoreError.io(path: "test", reason: "count failed") }
        let over = chats.filter { refuse.contains($0.id) }.map(\.id)
        return (chats.filter { !refuse.contains($0.id) }, over.isEmpty ? [] : [(.peerQuota, over)])
    }
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: RecordingLink) {
        for (reason, ids) in refused { link.send(.refused(reason, ids)) }
    }
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey) {}
    func wroteTo(_ peer: IdentityPublicKey) { wroteTo.append(peer) }
    /// Message events in the order they were sent ("delivered BODY-less id", "received body").
    var emitted: [String] = []
    /// Whether message transactions write journal rows (as under a resumable subscriber).
    var journals = false
    func emit(_ e: NodeEvent) {
        switch e {
        case .messageReceived(let m):
            received.append(m)
            emitted.append("received \(m.body)")
        case .messageDelivered(let m):
            delivered.append(m.id)
            emitted.append("delivered \(m.id.hex)")
        default: break
        }
    }
    func messageJournal(_ method: String) -> MessageJournal? {
        journals ? try? MessageJournal(method: method, at: 1) : nil
    }
}

/// A real store behind the `MessageStore` seam, counting the outbox reads and failing
/// `storeIncoming` when told.
final class CountingMessageStore: MessageStore {
    let inner: Store
    private(set) var pendingReads = 0
    var failStoreIncoming = false
    var failPendingRecipients = false
    init(_ inner: Store) { self.inner = inner }

    var path: String { inner.path }
    var roomOutboxesMayHaveWork: Bool { inner.roomOutboxesMayHaveWork }
    /// The next `enqueue` names its first message twice: the store's transaction fails at
    /// the insert (`.conflict`) and rolls back.
    var duplicateNextEnqueue = false
    func enqueue(_ messages: [NewOutgoingMessage], sender: IdentityPublicKey) throws(StoreError) -> [StoredMessage] {
        if duplicateNextEnqueue, let first = messages.first {
            duplicateNextEnqueue = false
            return try inner.enqueue(messages + [first], sender: sender)
        }
        return try inner.enqueue(messages, sender: sender)
    }
    func pendingOutgoing(to recipient: IdentityPublicKey, afterSequence: Int64, limit: Int)
        throws(StoreError) -> [StoredMessage]
    {
        pendingReads += 1
        return try inner.pendingOutgoing(to: recipient, afterSequence: afterSequence, limit: limit)
    }
    func pendingRecipients() throws(StoreError) -> [IdentityPublicKey: Int] {
        if failPendingRecipients { throw .io(path: inner.path, reason: "disk I/O error (test)") }
        return try inner.pendingRecipients()
    }
    func storeIncoming(
        _ chats: [ReceivedChat], from sender: IdentityPublicKey, to recipient: IdentityPublicKey, at: Int64,
        journal: MessageJournal?
    ) throws(StoreError) -> [(message: StoredMessage, isNew: Bool)] {
        if failStoreIncoming { throw .io(path: inner.path, reason: "disk I/O error (test)") }
        return try inner.storeIncoming(chats, from: sender, to: recipient, at: at, journal: journal)
    }
    func markDelivered(_ ids: [MessageID], by recipient: IdentityPublicKey, at: Int64, journal: MessageJournal?)
        throws(StoreError) -> [DeliveredMessage]
    {
        try inner.markDelivered(ids, by: recipient, at: at, journal: journal)
    }
    func whenDurable(through ticket: UInt64?, last: Bool, _ action: @escaping () -> Void) {
        inner.whenDurable(through: ticket, last: last, action)
    }
    func holdingSyncRequests<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try inner.holdingSyncRequests(body)
    }
    private(set) var markFlushes = 0
    func queueDeliveryMarks(_ ids: [MessageID], by recipient: IdentityPublicKey, at: Int64) -> Int {
        inner.queueDeliveryMarks(ids, by: recipient, at: at)
    }
    var hasPendingDeliveryMarks: Bool { inner.hasPendingDeliveryMarks }
    func journalDeliveryMarks(_ journal: MessageJournal?) { inner.journalDeliveryMarks(journal) }
    func flushDeliveryMarks(journal: MessageJournal?) throws(StoreError) {
        markFlushes += 1
        try inner.flushDeliveryMarks(journal: journal)
    }
    func takeCommittedDeliveries() -> [DeliveredMessage] { inner.takeCommittedDeliveries() }
}
