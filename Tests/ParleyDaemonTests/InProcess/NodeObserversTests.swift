import Foundation
import NIOEmbedded
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// Who hears from the node: observers are held weakly (a closed control connection that
/// forgot to remove itself is not kept alive, nor told anything), and a message
/// transaction journals its events only when an in-transaction journal listens.
final class NodeObserversTests: XCTestCase {
    private final class Recorder: NodeObserver {
        var events = 0
        func node(_ node: Node, didEmit event: NodeEvent) { events += 1 }
    }

    private final class Journal: NodeObserver, InTransactionJournal {
        var settled = 0
        func node(_ node: Node, didEmit event: NodeEvent) {}
        func settleBeforeMessageTransaction() { settled += 1 }
    }

    func testObserversAreHeldWeaklyAndJournalRowsOnlyWithAJournal() throws {
        let loop = EmbeddedEventLoop()
        let hub = try InProcessNode(name: "hub", loop: loop, clock: LoopClock(loop: loop))
        defer {
            hub.node.stop()
            try? FileManager.default.removeItem(atPath: hub.directory)
            _ = try? loop.syncShutdownGracefully()
        }
        let observers = NodeObservers()
        let kept = Recorder()
        var gone: Recorder? = Recorder()
        weak let goneRef = gone
        observers.add(kept)
        observers.add(gone!)
        gone = nil
        XCTAssertNil(goneRef, "not kept alive by the node")
        observers.emit(.peerOnline(identity: hub.node.myIdentityKey), from: hub.node)
        XCTAssertEqual(kept.events, 1)
        observers.remove(kept)
        observers.emit(.peerOnline(identity: hub.node.myIdentityKey), from: hub.node)
        XCTAssertEqual(kept.events, 1, "removed: told nothing more")

        XCTAssertNil(observers.messageJournal("message.received", at: 1), "no journal listens: no rows")
        let journal = Journal()
        observers.add(journal)
        XCTAssertNotNil(observers.messageJournal("message.received", at: 1))
        XCTAssertEqual(journal.settled, 1, "the journal stores what it holds first")
    }
}
