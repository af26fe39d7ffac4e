import Foundation
import ParleyCore
import XCTest

@testable import ParleyStore

/// Delivery marks queued to ride on the message path's next transaction
/// (Store+DeliveryMarks.swift, issue 32 part 10): written inside `enqueue` and
/// `storeIncoming`, reported only once committed, waiting again after a rollback, and
/// written by `close` rather than lost.
final class DeliveryMarkQueueTests: XCTestCase {
    var directory: String!
    var store: Store!
    let me = try! IdentityPublicKey(bytes: Array(repeating: 0x4e, count: 32))
    let bob = try! IdentityPublicKey(bytes: Array(repeating: 0x02, count: 32))

    override func setUpWithError() throws {
        directory = NSTemporaryDirectory() + "parley-deliverymarks-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        store = try Store(directory: directory)
    }

    override func tearDownWithError() throws {
        try? store?.close()
        store = nil
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func queue(_ body: String) throws -> StoredMessage {
        try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob, body: body, createdAt: 1)], sender: me)[0]
    }

    func testAMarkRidesOnTheNextEnqueueAndIsReportedOnlyOnceCommitted() throws {
        let first = try queue("m1")
        let before = store.committedWriteTransactions
        XCTAssertEqual(store.queueDeliveryMarks([first.id], by: bob, at: 42), 1)
        XCTAssertEqual(try store.message(id: first.id)?.state, .queued)
        XCTAssertEqual(store.takeCommittedDeliveries(), [], "nothing before a commit")
        store.journalDeliveryMarks(try MessageJournal(method: "message.delivered", at: 7))
        _ = try queue("m2")
        XCTAssertEqual(store.committedWriteTransactions, before + 1)
        XCTAssertFalse(store.hasPendingDeliveryMarks)
        let done = store.takeCommittedDeliveries()
        XCTAssertEqual(done.map(\.id), [first.id])
        XCTAssertEqual(done.first?.deliveredAt, 42)
        XCTAssertNotNil(done.first?.journalEventID, "its journal row committed with it")
        XCTAssertEqual(store.takeCommittedDeliveries(), [], "reported once")
        let stored = try store.message(id: first.id)
        XCTAssertEqual(stored?.state, .delivered)
        XCTAssertEqual(stored?.deliveredAt, 42)
        XCTAssertEqual(try store.pendingRecipients(), [bob: 1])
    }

    func testAMarkRidesOnTheNextIncomingStore() throws {
        let first = try queue("m1")
        store.queueDeliveryMarks([first.id], by: bob, at: 42)
        _ = try store.storeIncoming(
            [ReceivedChat(id: .random(), sequence: 1, createdAt: 1, body: "reply", replyTo: nil)], from: bob, to: me,
            at: 50, journal: nil)
        XCTAssertEqual(store.takeCommittedDeliveries().map(\.id), [first.id])
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
    }

    func testARolledBackTransactionLeavesItsMarksWaitingAndReportsNothing() throws {
        let first = try queue("m1")
        store.queueDeliveryMarks([first.id], by: bob, at: 42)
        let dup = NewOutgoingMessage(id: .random(), recipient: bob, body: "twice", createdAt: 1)
        XCTAssertThrowsError(try store.enqueue([dup, dup], sender: me))
        XCTAssertTrue(store.hasPendingDeliveryMarks)
        XCTAssertEqual(store.takeCommittedDeliveries(), [])
        XCTAssertEqual(try store.message(id: first.id)?.state, .queued)
        try store.flushDeliveryMarks(journal: nil)
        XCTAssertEqual(store.takeCommittedDeliveries().map(\.id), [first.id])
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
        XCTAssertEqual(try store.pendingRecipients(), [:], "the counters moved once")
    }

    func testClosingTheStoreWritesMarksStillWaiting() throws {
        let first = try queue("m1")
        store.queueDeliveryMarks([first.id], by: bob, at: 42)
        try store.close()
        store = try Store(directory: directory)
        XCTAssertEqual(try store.message(id: first.id)?.state, .delivered)
    }

    func testAnAckRepeatedOrForSomeoneElseChangesNothing() throws {
        let first = try queue("m1")
        let carol = try! IdentityPublicKey(bytes: Array(repeating: 0x03, count: 32))
        store.queueDeliveryMarks([first.id], by: carol, at: 42)  // not carol's message
        store.queueDeliveryMarks([first.id, first.id], by: bob, at: 43)
        store.queueDeliveryMarks([first.id], by: bob, at: 44)
        try store.flushDeliveryMarks(journal: nil)
        let done = store.takeCommittedDeliveries()
        XCTAssertEqual(done.map(\.id), [first.id])
        XCTAssertEqual(done.first?.deliveredAt, 43)
    }
}
