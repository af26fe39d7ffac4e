import Foundation
import ParleyCore
import XCTest

@testable import ParleyStore

/// The event journal's storage: ids, paging, bounds and pruning, on a real SQLite file.
final class EventJournalStoreTests: XCTestCase {
    private var directory: String!
    private let bob = String(repeating: "b0", count: 32)

    override func setUpWithError() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("parley-events-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    private func event(_ n: Int, at: Int64 = 1_000) -> NewJournalEvent {
        n.isMultiple(of: 2)
            ? NewJournalEvent(at: at, method: "message.received", peer: bob, messageRowID: Int64(n), params: nil)
            : NewJournalEvent(
                at: at, method: "peer.online", peer: nil, messageRowID: nil, params: Array("{\"n\":\(n)}".utf8))
    }

    func testIdsAreConsecutiveAndSurviveReopening() throws {
        var store: Store? = try Store(directory: directory)
        XCTAssertEqual(try store?.eventBounds().last, 0)
        XCTAssertEqual(try store?.appendEvents([event(1), event(2)]), [1, 2])
        XCTAssertEqual(try store?.appendEvents([]), [])
        try store?.close()
        store = nil
        let reopened = try Store(directory: directory)
        XCTAssertEqual(try reopened.appendEvents([event(3)]), [3])
        let all = try reopened.events(after: 0, through: 3, limit: 10)
        XCTAssertEqual(all.map(\.id), [1, 2, 3])
        XCTAssertEqual(all[0].event, event(1))
        XCTAssertEqual(all[1].event, event(2))
        XCTAssertEqual(try reopened.events(after: 1, through: 2, limit: 10).map(\.id), [2])
        XCTAssertEqual(try reopened.events(after: 0, through: 3, limit: 2).map(\.id), [1, 2])
        XCTAssertEqual(try reopened.events(after: 3, through: 3, limit: 10), [])
    }

    /// A room's messages and updates are filed under the room id (32 hex characters), so a
    /// subscription to "#room" can resume; a peer's under its identity (64).
    func testRoomAndPeerSubjectsAreStoredAndReturned() throws {
        let store = try Store(directory: directory)
        let room = String(repeating: "5a", count: 16)
        let roomMessage = NewJournalEvent(at: 1, method: "message.received", peer: room, messageRowID: 7, params: nil)
        let roomUpdate = NewJournalEvent(
            at: 1, method: "room.updated", peer: room, messageRowID: nil, params: Array("{}".utf8))
        XCTAssertEqual(try store.appendEvents([roomMessage, event(2), roomUpdate]), [1, 2, 3])
        XCTAssertEqual(
            try store.events(after: 0, through: 3, limit: 10).map(\.event), [roomMessage, event(2), roomUpdate])
    }

    /// Issue 32: the journal rows of a message transaction commit with the messages, in
    /// that one transaction (a SIGKILL cannot keep a message and lose its event, and the
    /// path costs one commit per batch, not two). Ids continue the journal's counter.
    func testMessageTransactionsWriteTheirJournalRowsInTheSameTransaction() throws {
        let store = try Store(directory: directory)
        let me = try IdentityPublicKey(bytes: Array(repeating: 0xa1, count: 32))
        let peer = try IdentityPublicKey(bytes: Array(repeating: 0xb0, count: 32))
        XCTAssertEqual(peer.hex, bob)
        XCTAssertEqual(try store.appendEvents([event(1)]), [1])
        func incoming(_ n: Int) -> IncomingMessage {
            IncomingMessage(
                id: String(format: "%032x", n), sender: bob, recipient: me.hex, sequence: Int64(n), createdAt: 5,
                body: "hello \(n)")
        }
        let received = try MessageJournal(method: "message.received", at: 1_234)
        let before = store.committedWriteTransactions
        let stored = try store.storeIncoming([incoming(1), incoming(2)], at: 7, journal: received)
        XCTAssertEqual(store.committedWriteTransactions, before + 1, "messages and their events: one commit")
        XCTAssertEqual(stored.map { $0.message.journalEventID }, [2, 3])
        let events = try store.events(after: 1, through: 3, limit: 10)
        XCTAssertEqual(
            events.map(\.event),
            stored.map {
                NewJournalEvent(
                    at: 1_234, method: "message.received", peer: bob, messageRowID: $0.message.rowID, params: nil)
            })
        // A duplicate is stored once: no second event.
        let again = try store.storeIncoming([incoming(2), incoming(3)], at: 8, journal: received)
        XCTAssertEqual(again.map(\.isNew), [false, true])
        XCTAssertEqual(again.map { $0.message.journalEventID }, [nil, 4])
        XCTAssertEqual(try store.eventBounds().last, 4)
        // Without a journal nothing is added (a node no client can resume from).
        _ = try store.storeIncoming([incoming(9)], at: 9)
        XCTAssertEqual(try store.eventBounds().last, 4)

        // Delivery marks: typed ids and key, the delivered events in the mark's transaction.
        let sent = try store.enqueue(
            [NewOutgoingMessage(id: String(format: "%032x", 77), recipient: bob, body: "out", createdAt: 1)],
            sender: me.hex)
        let id = sent[0].id
        let marks = store.committedWriteTransactions
        let delivered = try store.markDelivered(
            [id, id], by: peer, at: 50, journal: try MessageJournal(method: "message.delivered", at: 60))
        XCTAssertEqual(store.committedWriteTransactions, marks + 1)
        XCTAssertEqual(delivered.map(\.journalEventID), [5])
        XCTAssertEqual(
            try store.events(after: 4, through: 5, limit: 10).map(\.event),
            [NewJournalEvent(at: 60, method: "message.delivered", peer: bob, messageRowID: sent[0].rowID, params: nil)])
        XCTAssertEqual(try store.message(id: sent[0].id.hex)?.state, .delivered)
        XCTAssertThrowsError(try MessageJournal(method: "", at: 0))
    }

    /// Issue 32 part 11: a message transaction's event row no longer stores its peer's
    /// 64-character hex, only a marker that it concerns its message's conversation; reading
    /// the journal (what a resuming client's replay and its peer filter are built from) gives
    /// exactly what the hex row gave, before and after reopening, next to rows still holding
    /// the text (written before the change, or appended by the journal's flush).
    func testAMessageTransactionsEventsReadBackAsTheTextTheyStoredBefore() throws {
        var store: Store? = try Store(directory: directory)
        let me = String(repeating: "a1", count: 32)
        let carol = String(repeating: "c3", count: 32)
        func incoming(_ n: Int, from sender: String) -> IncomingMessage {
            IncomingMessage(
                id: String(format: "%032x", n), sender: sender, recipient: me, sequence: Int64(n), createdAt: 5,
                body: "hello \(n)")
        }
        let journal = try MessageJournal(method: "message.received", at: 1_234)
        let stored = try XCTUnwrap(store).storeIncoming(
            [incoming(1, from: bob), incoming(2, from: carol), incoming(3, from: bob)], at: 7, journal: journal)
        let rows = stored.map(\.message.rowID)
        // The same events as the journal wrote them before: the peer as text.
        let asText = zip(rows, [bob, carol, bob]).map {
            NewJournalEvent(at: 1_234, method: "message.received", peer: $1, messageRowID: $0, params: nil)
        }
        XCTAssertEqual(try store?.appendEvents(asText), [4, 5, 6])
        let markers = try XCTUnwrap(store).read { db in
            try String.fetchAll(db, sql: "SELECT peer FROM event WHERE id <= 3 ORDER BY id")
        }
        XCTAssertEqual(markers, ["", "", ""], "no hex in the message transaction's rows")
        for round in ["open", "reopened"] {
            let events = try XCTUnwrap(store).events(after: 0, through: 6, limit: 10).map(\.event)
            XCTAssertEqual(Array(events[0..<3]), asText, round)
            XCTAssertEqual(Array(events[3..<6]), asText, round)
            try store?.close()
            store = try Store(directory: directory)
        }
    }

    /// Issue 32 part 12: a delivery mark's journal rows hold the marker too, and read back
    /// as the conversation's text: the recipient of a direct message, the room of a room
    /// message's delivery (the text the rows held before).
    func testADeliveryMarksEventsReadBackAsTheirConversationsText() throws {
        var store: Store? = try Store(directory: directory)
        let me = String(repeating: "a1", count: 32)
        let queued = try XCTUnwrap(store).enqueue(
            [NewOutgoingMessage(id: MessageID.random().hex, recipient: bob, body: "to bob", createdAt: 1)], sender: me)
        let journal = try MessageJournal(method: "message.delivered", at: 2_000)
        let recipient = try XCTUnwrap(IdentityPublicKey(hex: bob))
        let delivered = try XCTUnwrap(store).markDelivered(
            queued.map(\.id), by: recipient, at: 9, journal: journal)
        XCTAssertEqual(delivered.count, 1)
        let eventID = try XCTUnwrap(delivered.first?.journalEventID)
        let marker = try XCTUnwrap(store).read { db in
            try String.fetchOne(db, sql: "SELECT peer FROM event WHERE id = ?", arguments: [eventID])
        }
        XCTAssertEqual(marker, "", "no hex in the mark's row")
        let asText = NewJournalEvent(
            at: 2_000, method: "message.delivered", peer: bob, messageRowID: queued[0].rowID, params: nil)
        for round in ["open", "reopened"] {
            let events = try XCTUnwrap(store).events(after: 0, through: eventID, limit: 10).map(\.event)
            XCTAssertEqual(events.last, asText, round)
            try store?.close()
            store = try Store(directory: directory)
        }
    }

    func testMalformedEventsAreRefused() throws {
        let store = try Store(directory: directory)
        let both = NewJournalEvent(at: 1, method: "x", peer: nil, messageRowID: 1, params: [1])
        let neither = NewJournalEvent(at: 1, method: "x", peer: nil, messageRowID: nil, params: nil)
        let badPeer = NewJournalEvent(at: 1, method: "x", peer: "zz", messageRowID: 1, params: nil)
        let upperRoom = NewJournalEvent(
            at: 1, method: "x", peer: String(repeating: "A", count: 32), messageRowID: 1, params: nil)
        let shortPeer = NewJournalEvent(
            at: 1, method: "x", peer: String(repeating: "a", count: 40), messageRowID: 1, params: nil)
        let noMethod = NewJournalEvent(at: 1, method: "", peer: nil, messageRowID: 1, params: nil)
        let huge = NewJournalEvent(
            at: 1, method: "x", peer: nil, messageRowID: nil,
            params: [UInt8](repeating: 0x20, count: JournalLimits.maxParamsBytes + 1))
        for e in [both, neither, badPeer, upperRoom, shortPeer, noMethod, huge] {
            XCTAssertThrowsError(try store.appendEvents([event(1), e])) { XCTAssertTrue($0 is StoreError) }
        }
        XCTAssertEqual(try store.eventBounds().last, 0, "a refused batch stores nothing and uses no id")
    }

    /// Issue 32: writing an event touches one b-tree (the table), not a second one for an
    /// index on its time; pruning by age still finds what is too old, also when an event
    /// written with a clock set back sits among recent ones.
    func testTheJournalHasNoTimeIndexAndStillPrunesByAge() throws {
        let store = try Store(directory: directory)
        let indexes = try store.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event'")
        }
        XCTAssertEqual(indexes, [], "the event table has only its primary key")
        _ = try store.appendEvents((1...5).map { event($0, at: 1_000) })
        _ = try store.appendEvents([event(6, at: 9_000), event(7, at: 500), event(8, at: 9_000)])
        XCTAssertEqual(try store.pruneEvents(keepLast: 100, notBefore: 2_000), 5, "the old prefix goes")
        XCTAssertEqual(try store.events(after: 0, through: 8, limit: 100).map(\.id), [6, 7, 8])
        XCTAssertEqual(try store.pruneEvents(keepLast: 100, notBefore: 10_000), 8, "all of them are old now")
    }

    func testPruningKeepsTheNewestAndDropsTheOld() throws {
        let store = try Store(directory: directory)
        _ = try store.appendEvents((1...10).map { event($0, at: 1_000) })
        _ = try store.appendEvents((11...20).map { event($0, at: 5_000) })
        XCTAssertEqual(try store.pruneEvents(keepLast: 15, notBefore: 0), 5)
        XCTAssertEqual(try store.eventBounds().prunedThrough, 5)
        XCTAssertEqual(try store.events(after: 0, through: 20, limit: 100).first?.id, 6)
        XCTAssertEqual(try store.pruneEvents(keepLast: 100, notBefore: 2_000), 10, "everything older than 2000 goes")
        XCTAssertEqual(try store.events(after: 0, through: 20, limit: 100).map(\.id), Array(11...20))
        XCTAssertEqual(try store.pruneEvents(keepLast: 100, notBefore: 0), 10, "never moves back")
        XCTAssertEqual(try store.appendEvents([event(21)]), [21], "ids are not reused after pruning")
        XCTAssertEqual(try store.pruneEvents(keepLast: 0, notBefore: 0), 21)
        XCTAssertEqual(try store.eventBounds().prunedThrough, 21)
        XCTAssertEqual(try store.eventBounds().last, 21)
        XCTAssertEqual(try store.events(after: 0, through: 21, limit: 100), [])
    }
}
