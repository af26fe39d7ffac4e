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
