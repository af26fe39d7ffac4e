import Foundation
import NIOCore
import NIOEmbedded
import ParleyControlProtocol
import ParleyCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// Collects what the journal hands a subscriber.
private final class JournalRecorder: EventJournalSubscriber {
    var lines: [(json: [String: Any], peer: String?)] = []
    func journal(_ journal: EventJournal, deliver line: [UInt8], peer: String?) {
        let json = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] ?? [:]
        lines.append((json, peer))
    }
    var eventIDs: [Int?] { lines.map { ($0.json["params"] as? [String: Any])?["eventId"] as? Int } }
}

final class EventJournalTests: XCTestCase {
    private var loop: EmbeddedEventLoop!
    private var node: InProcessNode!
    private var bob: PeerRecord!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        node = try InProcessNode(name: "alice", loop: loop, clock: LoopClock(loop: loop))
        bob = try TestIdentity(name: "bob").pinnedRecord()
        try node.node.store.upsertPeer(bob)
    }

    private func journal(_ limits: EventJournal.Limits = .standard) -> EventJournal {
        let journal = EventJournal(node: node.node, limits: limits)
        journal.start()
        return journal
    }

    /// `count` events, each in its own event-loop tick (each its own transaction).
    private func emit(_ journal: EventJournal, _ count: Int) {
        for i in 0..<count {
            journal.node(
                node.node,
                didEmit: i % 2 == 0 ? .peerOnline(identity: bob.identity) : .peerOffline(identity: bob.identity))
            loop.run()
        }
    }

    func testEventsAreNumberedStoredAndDeliveredOnce() throws {
        let journal = journal()
        let recorder = JournalRecorder()
        journal.addSubscriber(recorder)
        emit(journal, 3)
        XCTAssertEqual(journal.lastEventID, 3)
        XCTAssertEqual(recorder.eventIDs, [1, 2, 3])
        XCTAssertEqual(
            recorder.lines.map { $0.json["method"] as? String },
            [ControlEvent.peerOnline, ControlEvent.peerOffline, ControlEvent.peerOnline])
        XCTAssertEqual(
            recorder.lines.map(\.peer), Array(repeating: bob.identity.hex, count: 3), "filtered by the peer it concerns"
        )
        // Numbering continues across a restart of the journal (the store keeps the counter).
        let again = self.journal()
        XCTAssertEqual(again.lastEventID, 3)
    }

    func testEventsOfOneTickShareATransactionAndKeepTheirOrder() throws {
        let journal = journal()
        let recorder = JournalRecorder()
        journal.addSubscriber(recorder)
        for _ in 0..<4 { journal.node(node.node, didEmit: .peerOnline(identity: bob.identity)) }
        XCTAssertTrue(recorder.lines.isEmpty, "held until the end of the tick")
        loop.run()
        XCTAssertEqual(recorder.eventIDs, [1, 2, 3, 4])
    }

    func testPruningKeepsTheNewestAndResumingBeforeThemIsRefused() throws {
        var limits = EventJournal.Limits()
        limits.maxKeptEvents = 5
        limits.pruneEveryEvents = 1
        let journal = journal(limits)
        emit(journal, 12)
        XCTAssertEqual(journal.lastEventID, 12)
        XCTAssertEqual(journal.prunedThrough, 7, "only the newest five are kept")
        let kept = try node.node.store.events(after: 0, through: 12, limit: 100).map(\.id)
        XCTAssertEqual(kept, [8, 9, 10, 11, 12])
        XCTAssertEqual(journal.resumeProblem(since: 6)?.code, ControlErrorCode.eventsExpired.rawValue)
        XCTAssertNil(journal.resumeProblem(since: 7))
        XCTAssertEqual(
            journal.resumeProblem(since: 13)?.code, ControlErrorCode.invalidParams.rawValue,
            "an id newer than the newest is from another store")
    }

    func testPruningByAgeDropsOldEvents() throws {
        var limits = EventJournal.Limits()
        limits.maxKeptAgeMilliseconds = -60_000  // everything already counts as old
        limits.pruneEveryEvents = 1
        let journal = journal(limits)
        emit(journal, 3)
        XCTAssertEqual(journal.prunedThrough, 3)
        XCTAssertTrue(try node.node.store.events(after: 0, through: 3, limit: 100).isEmpty)
    }

    func testReplayGivesTheSameLinesAsLiveInPages() throws {
        var limits = EventJournal.Limits()
        limits.replayPageSize = 2
        let journal = journal(limits)
        let recorder = JournalRecorder()
        journal.addSubscriber(recorder)
        emit(journal, 5)
        var replayed: [[String: Any]] = []
        var after: Int64 = 1
        var pages = 0
        while after < journal.lastEventID {
            let page = try journal.replay(after: after, through: journal.lastEventID)
            XCTAssertLessThanOrEqual(page.items.count, 2)
            replayed += page.items.map {
                (try? JSONSerialization.jsonObject(with: Data($0.line))) as? [String: Any] ?? [:]
            }
            after = page.scannedThrough
            pages += 1
        }
        XCTAssertEqual(pages, 2)
        let live = recorder.lines.dropFirst().map(\.json)
        XCTAssertEqual(replayed.count, 4)
        for (r, l) in zip(replayed, live) {
            XCTAssertEqual(
                NSDictionary(dictionary: r), NSDictionary(dictionary: l), "a replayed event reads as it did live")
        }
    }

    /// Issue 32 part 11: the journal rows `storeIncoming` writes in the messages' own
    /// transaction no longer hold the peer's hex; a resuming client still gets, for each
    /// received message, the very line and peer filter a live subscriber got.
    func testAReceivedMessagesReplayIsTheLiveLineAndPeer() throws {
        let journal = journal()
        let recorder = RawJournalRecorder()
        journal.addSubscriber(recorder)
        let me = node.node.myIdentityKey
        let received = try node.node.store.storeIncoming(
            (1...3).map {
                IncomingMessage(
                    id: try XCTUnwrap(MessageID(hex: String(format: "%032x", $0))), sender: bob.identity, recipient: me,
                    sequence: Int64($0), createdAt: 1_700_000_000_000, body: "hello \($0)")
            }, at: 1_700_000_000_100, journal: try MessageJournal(method: ControlEvent.messageReceived, at: 5))
        for (m, _) in received { journal.node(node.node, didEmit: .messageReceived(m)) }
        loop.run()
        XCTAssertEqual(recorder.lines.count, 3)
        XCTAssertEqual(recorder.lines.map(\.peer), Array(repeating: bob.identity.hex, count: 3))
        let replayed = try journal.replay(after: 0, through: journal.lastEventID)
        XCTAssertEqual(replayed.items.map(\.peer), recorder.lines.map(\.peer), "filtered by the same peer")
        XCTAssertEqual(
            replayed.items.map { String(decoding: $0.line, as: UTF8.self) },
            recorder.lines.map { String(decoding: $0.line, as: UTF8.self) }, "byte for byte the live lines")
    }
}

/// What the journal hands a subscriber, as bytes.
private final class RawJournalRecorder: EventJournalSubscriber {
    var lines: [(line: [UInt8], peer: String?)] = []
    func journal(_ journal: EventJournal, deliver line: [UInt8], peer: String?) { lines.append((line, peer)) }
}
