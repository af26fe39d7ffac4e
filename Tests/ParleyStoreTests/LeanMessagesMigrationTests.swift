import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32 part 4: `lean-messages-v1` rebuilds the `message` table with integer party ids
/// and 16-byte ids (`Schema.registerLeanMessagesMigration`). Tested on a store written in
/// the shape the previous release left (every migration before this one), filled by SQL
/// with every kind of row and everything that refers to messages: nothing may be lost or
/// changed, row ids (client cursors) included, and every query must find the same rows.
final class LeanMessagesMigrationTests: StoreDirectoryTestCase {
    /// Messages in the migrated store: 100,000 in the suite; the issue's million by hand
    /// with `PARLEY_MIGRATION_TEST_MESSAGES=1000000` (docs/BENCHMARKS.md has its time).
    private var messageCount: Int {
        ProcessInfo.processInfo.environment["PARLEY_MIGRATION_TEST_MESSAGES"].flatMap { Int($0) } ?? 100_000
    }

    private var path: String { directory + "/" + Store.fileName }
    private var oldCopy: String { directory + "/before.sqlite" }

    private let me = String(format: "%064x", 99)
    private let room = String(format: "%032x", 5)
    private func peer(_ k: Int) -> String { String(format: "%064x", k) }

    /// The old store (Tests/fixtures/pre-lean-store/messages.sql says what is in it, shared
    /// with the booted upgrade test): every kind of message row and everything that refers
    /// to messages.
    private func oldStore(messages n: Int) throws {
        try PreLeanStoreFixture.write(path: path, messages: n, me: me, room: room)
        try FileManager.default.copyItem(atPath: path, toPath: oldCopy)
    }

    /// The new table's rows spelled the old way (hex, words), for an exact comparison.
    private static let rowsSpelledTheOldWay = """
        SELECT m.row_id, lower(hex(m.id)), CASE m.incoming WHEN 1 THEN 'incoming' ELSE 'outgoing' END,
               lower(hex(s.key)), lower(hex(r.key)), lower(hex(p.key)),
               m.sequence, m.created_at, CASE m.state WHEN 0 THEN 'queued' WHEN 1 THEN 'delivered' ELSE 'received' END,
               m.delivered_at, m.received_at, m.read_at, m.receipt_pending,
               CASE WHEN m.room IS NOT NULL THEN lower(hex(rm.key)) END,
               CASE WHEN m.reply_to IS NOT NULL THEN lower(hex(m.reply_to)) END,
               m.edited_at, m.deleted_at, m.change_sequence
        FROM main.message m JOIN party s ON s.id = m.sender JOIN party r ON r.id = m.recipient JOIN party p ON p.id = m.peer
        LEFT JOIN party rm ON rm.id = m.room
        """
    private static let oldRows = """
        SELECT row_id, id, direction, sender, recipient, peer, sequence, created_at, state, delivered_at, received_at,
               read_at, receipt_pending, room, reply_to, edited_at, deleted_at, change_sequence
        FROM old.message
        """

    /// What the queries answered before, read with the old schema's own SQL.
    private struct Expected {
        var unread: [String: Int] = [:]
        var peerPage: [Int64] = []
        var roomPage: [Int64] = []
        var outbox: [Int64] = []
        var receipts: [String] = []
        var roomUnread = 0
        var needlesWithPeer: Set<Int64> = []
    }

    private func expected() throws -> Expected {
        let queue = try DatabaseQueue(path: oldCopy)
        defer { try? queue.close() }
        return try queue.read { db in
            var e = Expected()
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT peer, COUNT(*) FROM message WHERE direction = 'incoming' AND read_at IS NULL AND room IS NULL
                    GROUP BY peer
                    """)
            { e.unread[row[0]] = row[1] }
            e.peerPage = try Int64.fetchAll(
                db, sql: "SELECT row_id FROM message WHERE peer = ? AND room IS NULL ORDER BY row_id DESC LIMIT 50",
                arguments: [peer(3)]
            ).reversed()
            e.roomPage = try Int64.fetchAll(
                db, sql: "SELECT row_id FROM message WHERE room = ? ORDER BY row_id DESC LIMIT 50", arguments: [room]
            ).reversed()
            e.outbox = try Int64.fetchAll(
                db,
                sql: "SELECT row_id FROM message WHERE recipient = ? AND state = 'queued' ORDER BY sequence LIMIT 100",
                arguments: [peer(4)])
            e.receipts = try String.fetchAll(
                db, sql: "SELECT id FROM message WHERE peer = ? AND receipt_pending = 1 ORDER BY row_id LIMIT 100",
                arguments: [peer(5)])
            e.roomUnread =
                try Int.fetchOne(
                    db,
                    sql: "SELECT COUNT(*) FROM message WHERE room = ? AND direction = 'incoming' AND read_at IS NULL",
                    arguments: [room]) ?? 0
            e.needlesWithPeer = Set(
                try Int64.fetchAll(
                    db,
                    sql: """
                        SELECT row_id FROM message WHERE row_id % 1000 = 0 AND peer = ? AND room IS NULL
                        ORDER BY row_id DESC LIMIT 200
                        """, arguments: [peer(2)]))
            return e
        }
    }

    func testEveryMessageRowIDAndReferenceSurvivesTheLeanSchema() throws {
        let n = messageCount
        try oldStore(messages: n)
        let e = try expected()

        let started = Date()
        var store: Store? = try Store(directory: directory)
        let took = Date().timeIntervalSince(started)
        print("LeanMessagesMigrationTests: \(n) messages migrated (store opened) in \(String(format: "%.2f", took)) s")
        let s = try XCTUnwrap(store)

        // What the API answers is what the old queries answered.
        let counts = try s.counts()
        XCTAssertEqual(counts.queued + counts.delivered + counts.received, n - 3)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: try s.unreadCounts().map { ($0.key.hex, $0.value) }), e.unread)
        let page = try s.historyPage(.peer(peer(3)), after: nil, before: nil, limit: 50)
        XCTAssertEqual(page.messages.map(\.rowID), e.peerPage)
        XCTAssertTrue(page.hasOlder)
        XCTAssertEqual(
            try s.historyPage(.room(room), after: nil, before: nil, limit: 50).messages.map(\.rowID), e.roomPage)
        XCTAssertEqual(try s.pendingOutgoing(to: peer(4), limit: 100).map(\.rowID), e.outbox)
        XCTAssertEqual(
            try s.pendingReadReceipts(to: StoredKeyFixture.key(peer(5)), limit: 100).map(\.hex), e.receipts)
        XCTAssertFalse(e.receipts.isEmpty)
        XCTAssertEqual(try s.roomUnreadCount(room: room), e.roomUnread)
        let hits = try s.search("needle", scope: .peer(peer(2)), limit: 200).hits
        XCTAssertEqual(Set(hits.map(\.message.rowID)), e.needlesWithPeer)
        XCTAssertFalse(e.needlesWithPeer.isEmpty)

        // One message of each kind, whole.
        let reply = try XCTUnwrap(s.message(id: String(format: "%032x", 13 * 3), sender: peer(13 * 3 % 7)))
        XCTAssertEqual(reply.replyTo?.hex, String(format: "%032x", 13 * 3 - 1))
        XCTAssertEqual(reply.direction, .incoming)
        XCTAssertEqual(reply.recipient.hex, me)
        XCTAssertEqual(reply.body, "body 39")
        let roomOut = try XCTUnwrap(s.message(id: String(format: "%032x", 22), sender: me))
        XCTAssertEqual(roomOut.room?.hex, room)
        XCTAssertEqual(roomOut.recipient.hex, room)
        XCTAssertEqual(roomOut.state, .queued)
        XCTAssertEqual(try s.pendingRoomMessages(to: peer(1), limit: 500).first?.rowID, 11)
        XCTAssertEqual(try s.pendingRoomMessages(to: peer(2), limit: 500), [])
        let edited = try XCTUnwrap(s.messages(rowIDs: [17])[17])
        XCTAssertEqual(edited.editedAt, 1_700_000_001_017)
        XCTAssertEqual(try s.messages(rowIDs: [19])[19]?.deletedAt, 1_700_000_002_019)
        XCTAssertEqual(try s.reactions(onRows: [23])[23]?.map(\.reaction), ["ok"])
        XCTAssertEqual(try s.refusal(ofMessageRow: 7)?.reason, 2)
        XCTAssertEqual(
            try s.pendingActions(to: peer(2), limit: 10).map(\.target.hex), [String(format: "%032x", 2)],
            "the edit of the delivered message is sent; the one of the queued message waits")
        // Journal replay renders each event's message from the table.
        let last = try s.eventBounds().last
        var events: [JournalEvent] = []
        for _ in 0..<(n / 997 / StoreLimits.maximumPageSize + 2) {
            let page = try s.events(after: events.last?.id ?? 0, through: last, limit: StoreLimits.maximumPageSize)
            if page.isEmpty { break }
            events += page
        }
        XCTAssertEqual(events.count, (n - 3) / 997)
        let rendered = try s.messages(rowIDs: events.compactMap(\.event.messageRowID))
        XCTAssertEqual(rendered.count, events.count)
        for event in events { XCTAssertEqual(rendered[event.event.messageRowID ?? 0]?.peer.hex, event.event.peer) }

        // Ids continue above the deleted newest rows; a duplicate id is still refused.
        let sent = try s.enqueue(
            [
                NewOutgoingMessage(
                    id: String(repeating: "f", count: 32), recipient: peer(3), body: "after", createdAt: 1)
            ],
            sender: me)
        XCTAssertEqual(sent.first?.rowID, Int64(n) + 1, "AUTOINCREMENT's high-water mark survived the rebuild")
        XCTAssertThrowsError(
            try s.enqueue(
                [NewOutgoingMessage(id: String(format: "%032x", 1), recipient: peer(4), body: "x", createdAt: 1)],
                sender: me))
        XCTAssertEqual(
            try s.storeIncoming(
                [
                    IncomingMessage(
                        id: String(format: "%032x", 3), sender: peer(3), recipient: me, sequence: 3, createdAt: 1,
                        body: "again")
                ],
                at: 9
            ).first?.isNew, false, "a resent incoming message is still recognised")
        try s.close()
        store = nil

        // Every row, exactly, and the tables that refer to messages, unchanged.
        var configuration = Configuration()
        configuration.prepareDatabase { db in Schema.registerSearchFunction(db) }
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS old", arguments: [oldCopy])
            let newRows = "\(Self.rowsSpelledTheOldWay) WHERE m.row_id <= \(n)"
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM main.message WHERE row_id <= \(n)"), n - 3)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(Self.oldRows) EXCEPT \(newRows))"), 0)
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM (\(newRows) EXCEPT \(Self.oldRows))"), 0)
            for table in ["message_body", "room_delivery", "reaction", "event", "message_action", "message_refusal"] {
                XCTAssertEqual(
                    try Int.fetchOne(
                        db, sql: "SELECT COUNT(*) FROM (SELECT * FROM old.\(table) EXCEPT SELECT * FROM main.\(table))"),
                    table == "message_body" ? 0 : 0, table)
            }
            // What a message's row and index entries occupy (dbstat: pages of the table and
            // its indexes, and of `party`), before and after.
            func bytesPerMessage(_ schema: String, _ tables: String) throws -> Double {
                let bytes =
                    try Int.fetchOne(
                        db,
                        sql: """
                            SELECT SUM(pgsize) FROM dbstat('\(schema)')
                            WHERE name IN (SELECT name FROM \(schema).sqlite_master WHERE tbl_name IN (\(tables)))
                            """) ?? 0
                return Double(bytes) / Double(n - 3)
            }
            let old = try bytesPerMessage("old", "'message'")
            let new = try bytesPerMessage("main", "'message', 'party'")
            print(
                "LeanMessagesMigrationTests: message table and indexes \(Int(old)) bytes per message before, \(Int(new)) after"
            )
            XCTAssertLessThan(new, old / 3, "the lean rows and indexes take less than a third of the space")
            XCTAssertEqual(try Row.fetchAll(db, sql: "PRAGMA main.foreign_key_check").count, 0)
            XCTAssertEqual(try String.fetchOne(db, sql: "PRAGMA main.integrity_check"), "ok")
            XCTAssertEqual(
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT name FROM main.sqlite_master WHERE type = 'index' AND tbl_name = 'message' ORDER BY name"
                ),
                [
                    "message_id_sender", "message_peer", "message_queued", "message_receipt_pending", "message_room",
                    "message_unread"
                ])
        }
        try queue.close()
    }

    /// A value the lean table cannot hold (not hex: only a damaged or hand-edited file has
    /// one) refuses the store, naming the row, and changes nothing.
    func testAValueThatIsNotHexStopsTheMigrationAndKeepsTheStore() throws {
        try refusesTheStore(
            "UPDATE message SET reply_to = 'not hex at all, 32 characters!!!' WHERE row_id = 4", naming: 4)
    }

    func testARecipientThatIsNotHexStopsTheMigrationAndKeepsTheStore() throws {
        try refusesTheStore("UPDATE message SET recipient = 'room?', peer = 'room?' WHERE row_id = 5", naming: 5)
    }

    private func refusesTheStore(_ damage: String, naming row: Int) throws {
        try oldStore(messages: 10)
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try db.execute(sql: damage) }
        try queue.close()
        XCTAssertThrowsError(try Store(directory: directory)) { error in
            XCTAssertTrue("\(error)".contains("row \(row)"), "\(error)")
        }
        let after = try DatabaseQueue(path: path)
        try after.read { db in
            XCTAssertEqual(try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM message"), 7)
            XCTAssertFalse(try db.tableExists("party"))
        }
        try after.close()
    }
}
