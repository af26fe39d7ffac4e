import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// Issue 32 part 10: an acknowledged delivery's mark waits for the message path's next
/// transaction (`DeliveryMarkFold`). A clean stop must not lose one that still waits:
/// `Node.stop` writes it (and reports it) before the sessions close.
final class DeliveryMarkStopTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var alice: InProcessNode!
    var bob: InProcessNode!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock)
    }

    override func tearDownWithError() throws {
        bob.node.stop()
        _ = try? loop.syncShutdownGracefully()
        for n in [alice, bob] { try? FileManager.default.removeItem(atPath: n!.directory) }
        alice = nil
        bob = nil
    }

    /// A read receipt implies the ack (Node+ReadReceipts.swift) and is recorded only on a
    /// delivered message: arriving right behind the ack, while the ack's mark still waits,
    /// it must still mark the message read (message.delivered first, then message.read).
    func testAReadReceiptRightBehindTheAckMarksTheMessageRead() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let sent = try alice.node.send(to: try alice.node.resolvePeer("bob"), body: "read me")
        try link.exchange(.initiatorToResponder)  // bob stores it; its ack waits in bob's output
        _ = try bob.node.markRead(try bob.node.resolvePeer("alice"), upTo: nil)  // and the receipt
        try link.exchange()  // alice reads both without virtual time moving
        let atAlice = try alice.node.store.message(id: sent.id)
        XCTAssertEqual(atAlice?.state, .delivered)
        XCTAssertNotNil(atAlice?.readAt, "the receipt was recorded")
        let order = alice.events.compactMap { e -> String? in
            switch e {
            case .messageDelivered(let m) where m.id == sent.id: return "delivered"
            case .messageRead(let m) where m.id == sent.id: return "read"
            default: return nil
            }
        }
        XCTAssertEqual(order, ["delivered", "read"])
    }

    /// An edit made before the message's ack waits for its target's delivery: it reaches
    /// the peer once the waiting mark is written (here by the timer: nothing else is sent).
    func testAnEditWaitingForItsTargetGoesOutOnceTheMarkIsWritten() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let sent = try alice.node.send(to: try alice.node.resolvePeer("bob"), body: "typo")
        _ = try alice.node.perform(.edit(body: "fixed"), on: sent)  // before the ack
        try link.exchange()
        link.writeDeliveryMarks()
        try link.exchange()
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
        XCTAssertEqual(try bob.node.store.message(id: sent.id, sender: alice.identity)?.body, "fixed")
    }

    func testAStopWritesAndReportsAMarkStillWaiting() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let sent = try alice.node.send(to: try alice.node.resolvePeer("bob"), body: "before the stop")
        try link.exchange()  // bob stores and acknowledges; alice queues the mark
        XCTAssertEqual(try bob.node.store.message(id: sent.id, sender: alice.identity)?.body, "before the stop")
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .queued, "the mark waits")
        XCTAssertTrue(alice.node.store.hasPendingDeliveryMarks)

        alice.node.stop()
        XCTAssertFalse(alice.node.store.hasPendingDeliveryMarks)
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
        XCTAssertTrue(
            alice.events.contains {
                if case .messageDelivered(let m) = $0 { return m.id == sent.id } else { return false }
            }, "message.delivered is sent before the stop completes")
    }
}
