import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Read state and read receipts, on a real SQLite file.
final class ReadStateTests: XCTestCase {
    private var directory: String!
    private let me = String(repeating: "01", count: 32)
    private let alice = String(repeating: "a1", count: 32)
    private let bob = String(repeating: "b0", count: 32)
    private var aliceKey: IdentityPublicKey { StoredKeyFixture.key(alice) }
    private var bobKey: IdentityPublicKey { StoredKeyFixture.key(bob) }

    override func setUpWithError() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent("parley-read-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
    }

    override func tearDownWithError() throws { try? FileManager.default.removeItem(atPath: directory) }

    private func id(_ n: Int) -> String { String(format: "%032x", n) }
    private func mid(_ n: Int) -> MessageID { MessageID(hex: id(n))! }

    private func receive(_ store: Store, _ ns: ClosedRange<Int>, from sender: String) throws -> [StoredMessage] {
        try store.storeIncoming(
            ns.map {
                IncomingMessage(
                    id: id($0), sender: sender, recipient: me, sequence: Int64($0), createdAt: 1, body: "m\($0)")
            }, at: 5
        ).map(\.message)
    }

    func testMarkingReadCountsUnreadAndQueuesReceipts() throws {
        let store = try Store(directory: directory)
        let fromAlice = try receive(store, 1...5, from: alice)
        _ = try receive(store, 10...11, from: bob)
        XCTAssertEqual(try store.unreadCounts(), [aliceKey: 5, bobKey: 2])

        let marked = try store.markIncomingRead(from: aliceKey, upTo: fromAlice[2].rowID, at: 100, queueReceipts: true)
        XCTAssertEqual(marked, [mid(1), mid(2), mid(3)])
        XCTAssertEqual(try store.unreadCounts(), [aliceKey: 2, bobKey: 2])
        XCTAssertEqual(try store.message(id: id(2), sender: alice)?.readAt, 100)
        XCTAssertNil(try store.message(id: id(4), sender: alice)?.readAt)
        XCTAssertEqual(
            try store.markIncomingRead(from: aliceKey, upTo: fromAlice[2].rowID, at: 200, queueReceipts: true), [],
            "reading again changes nothing")
        XCTAssertEqual(try store.message(id: id(2), sender: alice)?.readAt, 100, "the first read time is kept")

        XCTAssertEqual(try store.pendingReadReceipts(to: aliceKey, limit: 10), [mid(1), mid(2), mid(3)])
        XCTAssertEqual(try store.pendingReadReceipts(to: aliceKey, limit: 2), [mid(1), mid(2)])
        XCTAssertEqual(try store.peersOwedReadReceipts(), [aliceKey])
        try store.clearPendingReadReceipts(ids: [mid(1), mid(2)], from: aliceKey)
        XCTAssertEqual(try store.pendingReadReceipts(to: aliceKey, limit: 10), [mid(3)])
        try store.clearPendingReadReceipts(ids: [mid(3)], from: bobKey)
        XCTAssertEqual(try store.pendingReadReceipts(to: aliceKey, limit: 10), [mid(3)], "scoped to the sender")

        // With receipts off the messages are read all the same, but nothing is owed.
        XCTAssertEqual(try store.markIncomingRead(from: bobKey, upTo: nil, at: 300, queueReceipts: false).count, 2)
        XCTAssertEqual(try store.unreadCounts(), [aliceKey: 2])
        XCTAssertEqual(try store.pendingReadReceipts(to: bobKey, limit: 10), [])
    }

    func testReceiptsFromTheRecipientMarkOnlyItsDeliveredMessages() throws {
        let store = try Store(directory: directory)
        let sent = try store.enqueue(
            (1...3).map { NewOutgoingMessage(id: id($0), recipient: bob, body: "o\($0)", createdAt: 1) },
            sender: me)
        _ = try store.markDelivered(ids: [id(1), id(2)], by: bob, at: 50)
        XCTAssertEqual(
            try store.markReadByRecipient(ids: [mid(1)], by: aliceKey, at: 60), [], "alice cannot read bob's mail")
        XCTAssertEqual(
            try store.markReadByRecipient(ids: [mid(3)], by: bobKey, at: 60), [], "still queued: the ack comes first")
        let read = try store.markReadByRecipient(ids: [mid(1), mid(2)], by: bobKey, at: 60)
        XCTAssertEqual(read.map(\.id.hex), [id(1), id(2)])
        XCTAssertEqual(read.map(\.readAt), [60, 60])
        XCTAssertEqual(try store.markReadByRecipient(ids: [mid(1)], by: bobKey, at: 70), [], "receipts are idempotent")
        XCTAssertEqual(try store.message(id: id(1), sender: me)?.readAt, 60)
        XCTAssertEqual(try store.messages(rowIDs: [sent[0].rowID, 999_999]).keys.sorted(), [sent[0].rowID])
    }

    /// A database written before this migration existed is upgraded in place: its messages
    /// are unread, nothing is owed, the journal is empty.
    func testDatabaseFromBeforeReadStateIsMigrated() throws {
        let path = directory + "/" + Store.fileName
        let queue = try DatabaseQueue(path: path)
        try Schema.migrator.migrate(queue, upTo: "v1")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO message (id, direction, sender, recipient, peer, sequence, created_at, body, state, received_at)
                    VALUES (?, 'incoming', ?, ?, ?, 1, 1, x'6869', 'received', 2)
                    """, arguments: [id(1), alice, me, alice])
        }
        try queue.close()
        let store = try Store(directory: directory)
        XCTAssertEqual(try store.unreadCounts(), [aliceKey: 1])
        XCTAssertEqual(try store.message(id: id(1), sender: alice)?.body, "hi")
        XCTAssertNil(try store.message(id: id(1), sender: alice)?.readAt)
        XCTAssertEqual(try store.pendingReadReceipts(to: aliceKey, limit: 10), [])
        XCTAssertEqual(try store.eventBounds().last, 0)
    }
}
