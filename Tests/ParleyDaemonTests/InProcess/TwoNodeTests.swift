import NIOCore
import NIOEmbedded
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// Two whole nodes in one process, joined by embedded channels on one virtual-time loop:
/// the message path (handshake, trust on first use, store, pump, ack, delivery) and the
/// timers that take seconds on real daemons (ack-timeout resend, dead peer, redial),
/// each in milliseconds of test time.
final class TwoNodeTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var alice: InProcessNode!
    var bob: InProcessNode!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        var options = NodeOptions()
        options.window = SendWindowLimits(maxCount: 4, maxBytes: 1_048_576, ackTimeout: .seconds(30))
        // Pings after 5 s of silence (the default is ten minutes) so the tests below see some.
        options.pingInterval = .seconds(5)
        alice = try InProcessNode(name: "alice", loop: loop, clock: clock, options: options)
        // Bob tolerates a long stall of alice's frames (the ack-timeout test holds them).
        options.deadAfter = .seconds(120)
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock, options: options)
    }

    override func tearDownWithError() throws {
        alice.node.stop()
        bob.node.stop()
        _ = try? loop.syncShutdownGracefully()
        // XCTest keeps every test case object until the run ends, so the nodes' deinit
        // (which deletes their state directories) would never run: 500 MiB of /tmp per
        // thousand runs. Delete them here.
        for n in [alice, bob] { try? FileManager.default.removeItem(atPath: n!.directory) }
        alice = nil
        bob = nil
    }

    func connect() throws -> InProcessLink {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        return link
    }

    func bobAtAlice() throws -> PeerRecord { try alice.node.resolvePeer("bob") }

    func testHandshakePinsBothSidesAndAnnouncesPresence() throws {
        _ = try connect()
        XCTAssertTrue(alice.node.sessionDriver.table.isOnline(bob.identity))
        XCTAssertTrue(bob.node.sessionDriver.table.isOnline(alice.identity))
        XCTAssertEqual(try alice.node.store.peer(identity: bob.identity)?.trust, .pinned)
        XCTAssertEqual(try bob.node.store.peer(identity: alice.identity)?.displayName, "alice")
        XCTAssertTrue(
            alice.events.contains { if case .peerOnline(bob.identity) = $0 { return true } else { return false } })
    }

    func testAMessageIsStoredAcknowledgedAndMarkedDelivered() throws {
        let link = try connect()
        let sent = try alice.node.send(to: try bobAtAlice(), body: "lunch at noon?")
        try link.exchange()
        let received = try bob.node.store.message(id: sent.id, sender: alice.identity)
        XCTAssertEqual(received?.body, "lunch at noon?")
        link.writeDeliveryMarks()  // no transaction to ride on: the marks' timer
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
        XCTAssertTrue(
            alice.events.contains {
                if case .messageDelivered(let m) = $0 { return m.id == sent.id } else { return false }
            })
    }

    /// Group commit (Store+GroupCommit.swift): the receiver stores a message at once but
    /// acknowledges it only once its commit is on disk, so the sender keeps it queued until then.
    func testTheReceiverAcknowledgesOnlyOnceItsCommitIsSynced() throws {
        let link = try connect()
        let held = HeldSync()
        try bob.node.store.startGroupCommit(
            sync: { held.sync() }, hop: { held.hop($0) }, failed: { _ in XCTFail("failed") })
        let sent = try alice.node.send(to: try bobAtAlice(), body: "after the sync")
        try link.exchange()
        XCTAssertEqual(try bob.node.store.message(id: sent.id, sender: alice.identity)?.body, "after the sync")
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .queued, "no ack before bob's sync")
        held.release()
        loop.run()
        try link.exchange()
        link.writeDeliveryMarks()  // no transaction to ride on: the marks' timer
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
        held.gate.signal()
    }

    /// Issue 32: with a journal attached (as under the control server), each side commits
    /// ONE write transaction for a message: the receiver stores it with its
    /// `message.received` event, the sender marks it delivered with its `message.delivered`
    /// event. Both events reach the journal with the ids those transactions gave them.
    func testEachSideCommitsOneTransactionPerMessageWithItsJournalRow() throws {
        let link = try connect()
        let aliceJournal = EventJournal(node: alice.node)
        let bobJournal = EventJournal(node: bob.node)
        for (node, journal) in [(alice.node, aliceJournal), (bob.node, bobJournal)] {
            journal.start()
            node.addObserver(journal)
        }
        // An event without an id waits in bob's journal: it must be stored before the
        // message's row so ids keep the order of emission.
        bobJournal.node(bob.node, didEmit: .peerOnline(identity: alice.identity))
        let sent = try alice.node.send(to: try bobAtAlice(), body: "one commit each")
        let (aliceBefore, bobBefore) = (
            alice.node.store.committedWriteTransactions, bob.node.store.committedWriteTransactions
        )
        try link.exchange(.initiatorToResponder)
        XCTAssertEqual(
            bob.node.store.committedWriteTransactions - bobBefore, 2, "the waiting event, then the message with its row"
        )
        try link.exchange()
        link.writeDeliveryMarks()  // no transaction to ride on: the marks' timer
        XCTAssertEqual(alice.node.store.committedWriteTransactions - aliceBefore, 1, "the mark with its row")
        loop.run()
        XCTAssertEqual(
            bob.node.store.committedWriteTransactions - bobBefore, 2, "the journal's flush wrote nothing more")
        let bobEvents = try bob.node.store.events(after: 0, through: 10, limit: 10)
        XCTAssertEqual(bobEvents.map(\.event.method), [ControlEvent.peerOnline, ControlEvent.messageReceived])
        XCTAssertEqual(bobJournal.lastEventID, 2)
        let aliceEvents = try alice.node.store.events(after: 0, through: 10, limit: 10)
        XCTAssertEqual(aliceEvents.map(\.event.method), [ControlEvent.messageDelivered])
        XCTAssertEqual(aliceEvents.first?.event.messageRowID, sent.rowID)
        XCTAssertEqual(aliceJournal.lastEventID, 1)
    }

    func testTheWindowHoldsBackWhatDoesNotFitUntilAcksArrive() throws {
        let link = try connect()
        let bobRecord = try bobAtAlice()
        let sent = try (0..<10).map { try alice.node.send(to: bobRecord, body: "m\($0)") }
        // Alice's frames cross, bob's acks are held back.
        try link.exchange(.initiatorToResponder)
        func arrived() throws -> Int {
            try sent.filter { try bob.node.store.message(id: $0.id, sender: alice.identity) != nil }.count
        }
        func delivered() throws -> Int {
            try sent.filter { try alice.node.store.message(id: $0.id)?.state == .delivered }.count
        }
        XCTAssertEqual(try arrived(), 4, "a window of 4 sends 4 before the first ack")
        XCTAssertEqual(try delivered(), 0)
        try link.exchange()  // the acks arrive, the window opens, the rest follows
        XCTAssertEqual(try arrived(), 10)
        link.writeDeliveryMarks()  // no transaction to ride on: the marks' timer
        XCTAssertEqual(try delivered(), 10)
        XCTAssertEqual(alice.node.sessionDriver.links[ObjectIdentifier(link.initiatorConnection)]?.window.isEmpty, true)
    }

    func testAStalledSendIsResentAfterTheAckTimeoutAndDeliveredOnce() throws {
        let link = try connect()
        let bobRecord = try bobAtAlice()
        let sent = try alice.node.send(to: bobRecord, body: "are you there?")
        // Alice's frames stall on the way (bob's pings still reach her, so she keeps the
        // session); no ack can come.
        for _ in 0..<6 {
            link.advance(.seconds(5))
            alice.node.keepaliveTick()
            bob.node.keepaliveTick()
            try link.exchange(.responderToInitiator)
        }
        XCTAssertTrue(alice.node.sessionDriver.table.isOnline(bob.identity))
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .queued, "30 s: not resent yet")
        let heldBefore = try link.initiatorFramesHeld()
        link.advance(.seconds(1))
        alice.node.keepaliveTick()  // past 30 s: the window resets and the pump sends it again
        XCTAssertEqual(try link.initiatorFramesHeld(), heldBefore + 1, "the message was written again")
        try link.exchange()  // the stall ends: both copies arrive, in order
        link.writeDeliveryMarks()  // no transaction to ride on: the marks' timer
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
        let atBob = try bob.node.store.messages(peer: alice.identity, after: nil, limit: 10)
        XCTAssertEqual(atBob.map(\.id), [sent.id], "the second copy was de-duplicated")
        XCTAssertEqual(
            bob.events.filter { if case .messageReceived = $0 { return true } else { return false } }.count, 1)
    }

    func testWithoutTheTimeoutNothingIsSentTwice() throws {
        let link = try connect()
        _ = try alice.node.send(to: try bobAtAlice(), body: "once")
        let first = try link.exchange(.responderToInitiator)
        XCTAssertEqual(first.forward, 0)
        alice.node.keepaliveTick()
        alice.node.pump(link.initiatorConnection)
        loop.run()
        // Nothing new was written: the message is in flight, the window does not send it again.
        XCTAssertNil(try link.initiator.readOutbound(as: ByteBuffer.self))
    }

    func testASilentPeerIsClosedAfterDeadAfterAndGoesOffline() throws {
        let link = try connect()
        link.advance(.seconds(5))
        alice.node.keepaliveTick()  // 5 s of silence: alice pings
        try link.exchange(.initiatorToResponder)  // alice's ping reaches bob; bob's pong stalls
        link.advance(.seconds(15))
        alice.node.keepaliveTick()
        XCTAssertTrue(
            alice.node.sessionDriver.table.isOnline(bob.identity), "unanswered for 15 s is not yet past deadAfter")
        try link.exchange(.initiatorToResponder)
        link.advance(.milliseconds(1))
        alice.node.keepaliveTick()
        try link.exchange(.initiatorToResponder)
        XCTAssertFalse(alice.node.sessionDriver.table.isOnline(bob.identity))
        XCTAssertTrue(
            alice.events.contains { if case .peerOffline(bob.identity) = $0 { return true } else { return false } })
    }

    func testASecondConnectionOfTheSamePairIsClosedByTheTieBreak() throws {
        let first = try connect()
        let second = try InProcessLink(from: bob, to: alice, loop: loop)
        try second.exchange()
        try first.exchange()
        // Both nodes keep the same connection, and exactly one session each.
        let keptAtAlice = alice.node.sessionDriver.table.handle(for: bob.identity)
        let keptAtBob = bob.node.sessionDriver.table.handle(for: alice.identity)
        let firstKept = keptAtAlice == ObjectIdentifier(first.initiatorConnection)
        XCTAssertEqual(keptAtBob == ObjectIdentifier(first.responderConnection), firstKept)
        let secondKept = keptAtAlice == ObjectIdentifier(second.responderConnection)
        XCTAssertNotEqual(firstKept, secondKept)
        // The smaller identity's connection wins (same boot on both sides).
        let aliceIsSmaller = alice.identity.bytes.lexicographicallyPrecedes(bob.identity.bytes)
        XCTAssertEqual(firstKept, aliceIsSmaller)
        // Presence never flapped.
        XCTAssertFalse(alice.events.contains { if case .peerOffline = $0 { return true } else { return false } })
    }

    /// A peer is its key: a second key calling itself "bob" is a second peer, marked as a
    /// name clash, and the real bob's session, trust and name are untouched.
    func testAnImpostorUnderAPinnedNameIsASeparatePeerWithAClashMarker() throws {
        _ = try connect()
        XCTAssertNil(alice.node.nameClash(of: bob.identity))
        let impostor = try InProcessNode(name: "bob", loop: loop, clock: clock)
        let link = try InProcessLink(from: impostor, to: alice, loop: loop)
        try link.exchange()
        XCTAssertTrue(alice.node.sessionDriver.table.isOnline(impostor.identity), "a new key is pinned on first use")
        XCTAssertTrue(alice.node.sessionDriver.table.isOnline(bob.identity), "the real bob's session is untouched")
        XCTAssertEqual(try alice.node.store.peer(identity: bob.identity)?.trust, .pinned)
        XCTAssertEqual(alice.node.nameClash(of: bob.identity)?.with, [impostor.identity])
        XCTAssertEqual(alice.node.nameClash(of: impostor.identity)?.kind, .sameName)
        XCTAssertThrowsError(try alice.node.resolvePeer("bob"), "a shared name never picks one")
        XCTAssertEqual(try alice.node.resolvePeer(bob.identity.hex).identity, bob.identity)
        XCTAssertTrue(alice.node.displayName(of: impostor.identity).contains("⚠"))
    }

    /// A pinned peer that renames itself to another pinned peer's name is marked at once
    /// (its card update re-pins the name), and sending by that name becomes ambiguous.
    func testAPeerRenamingItselfToAnotherContactsNameIsMarked() throws {
        let link = try connect()
        let carol = try InProcessNode(name: "carol", loop: loop, clock: clock)
        let carolLink = try InProcessLink(from: carol, to: alice, loop: loop)
        try carolLink.exchange()
        XCTAssertNil(alice.node.nameClash(of: carol.identity))
        link.advance(.seconds(2))  // a later second: the re-issued card's sequence grows by time
        try carol.node.reissueCard(displayName: "bob", hostName: "carol-host")
        try carolLink.exchange()
        XCTAssertEqual(try alice.node.store.peer(identity: carol.identity)?.displayName, "bob")
        XCTAssertEqual(alice.node.nameClash(of: carol.identity)?.with, [bob.identity])
        XCTAssertEqual(alice.node.nameClash(of: bob.identity)?.with, [carol.identity])
        XCTAssertThrowsError(try alice.node.resolvePeer("bob"))
    }

    func testUnderTheHoldPolicyANewKeyGetsNoSessionUntilAccepted() throws {
        var options = NodeOptions()
        options.newIdentities = .hold
        let strict = try InProcessNode(name: "strict", loop: loop, clock: clock, options: options)
        let link = try InProcessLink(from: alice, to: strict, loop: loop)
        try link.exchange()
        XCTAssertFalse(strict.node.sessionDriver.table.isOnline(alice.identity))
        XCTAssertEqual(link.initiatorConnection.remoteCloseReason, .notTrusted)
        let held = try XCTUnwrap(try strict.node.store.peer(identity: alice.identity))
        XCTAssertEqual(held.trust, .pending)
        XCTAssertThrowsError(try strict.node.send(to: held, body: "hi")) { error in
            guard case NodeError.peerAwaitingApproval = error else { return XCTFail("\(error)") }
        }
        _ = try strict.node.accept(held)
        let again = try InProcessLink(from: alice, to: strict, loop: loop)
        try again.exchange()
        XCTAssertTrue(strict.node.sessionDriver.table.isOnline(alice.identity))
    }
}
