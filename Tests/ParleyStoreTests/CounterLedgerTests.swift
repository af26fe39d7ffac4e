import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32 part 9: the message path's counters are gathered in memory during a transaction
/// (`CounterLedger`) and written by one statement before its COMMIT; the sequence and journal
/// counters are remembered between transactions. Every counter must still equal what a full
/// count gives, whatever failed in between, and a number must never be handed out twice.
final class CounterLedgerTests: StoreDirectoryTestCase {
    private let me = try! IdentityPublicKey(bytes: Array(repeating: 0x4e, count: 32))
    private let alice = try! IdentityPublicKey(bytes: Array(repeating: 0x01, count: 32))
    private let bob = try! IdentityPublicKey(bytes: Array(repeating: 0x02, count: 32))

    private struct Injected: Error {}

    private func id(_ n: Int) -> MessageID {
        MessageID(bytes: Array(repeating: 0xc0, count: 12) + withUnsafeBytes(of: UInt32(n).bigEndian, Array.init))!
    }

    private func outgoing(_ n: Int, to peer: IdentityPublicKey) -> NewOutgoingMessage {
        NewOutgoingMessage(id: id(n), recipient: peer, body: "out \(n)", createdAt: Int64(n))
    }

    private func chat(_ n: Int) -> ReceivedChat {
        ReceivedChat(id: id(n), sequence: Int64(n), createdAt: Int64(n), body: "in \(n)", replyTo: nil)
    }

    /// The stored counters against a full count of the rows they stand for.
    private func assertCountersMatchTheRows(
        _ store: Store, _ label: String, lastSequence: Int64, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        let (stored, counted) = try store.read { db -> ([String: Int64], [String: Int64]) in
            var stored: [String: Int64] = [:]
            let row = try XCTUnwrap(try Row.fetchOne(db, sql: "SELECT * FROM message_counter WHERE id = 1"))
            for name in CounterLedger.Name.allCases { stored[name.column] = row[name.column] }
            func count(_ sql: String) throws -> Int64 { try Int64.fetchOne(db, sql: sql) ?? 0 }
            let counted: [String: Int64] = [
                Schema.Counter.queued: try count("SELECT COUNT(*) FROM message WHERE state = 0"),
                Schema.Counter.delivered: try count("SELECT COUNT(*) FROM message WHERE state = 1"),
                Schema.Counter.received: try count("SELECT COUNT(*) FROM message WHERE state = 2"),
                Schema.Counter.lastEventID: try count("SELECT COALESCE(MAX(id), 0) FROM event")
            ]
            return (stored, counted)
        }
        for (name, value) in counted {
            XCTAssertEqual(stored[name], value, "\(label): counter \(name)", file: file, line: line)
        }
        XCTAssertEqual(
            stored[Schema.Counter.lastSequence], lastSequence, "\(label): last sequence", file: file, line: line)
        let counts = try store.counts()
        XCTAssertEqual(Int64(counts.queued), counted[Schema.Counter.queued], label, file: file, line: line)
        XCTAssertEqual(Int64(counts.delivered), counted[Schema.Counter.delivered], label, file: file, line: line)
        XCTAssertEqual(Int64(counts.received), counted[Schema.Counter.received], label, file: file, line: line)
    }

    func testEveryCounterEqualsAFullCountAfterWritesAndFailedTransactions() throws {
        var store = try Store(directory: directory)
        let journal = try MessageJournal(method: "message.received", at: 5)
        let deliveredJournal = try MessageJournal(method: "message.delivered", at: 6)

        let first = try store.enqueue((0..<5).map { outgoing($0, to: alice) }, sender: me)
        XCTAssertEqual(first.map(\.sequence), Array(1...5))
        _ = try store.enqueue([outgoing(5, to: bob)], sender: me)
        _ = try store.storeIncoming((100..<103).map(chat), from: alice, to: me, at: 7, journal: journal)
        _ = try store.markDelivered([id(0), id(1)], by: alice, at: 8, journal: deliveredJournal)
        try assertCountersMatchTheRows(store, "after sends, receipts and deliveries", lastSequence: 6)

        // A failed enqueue (a duplicate id) after its sequence numbers were reserved.
        XCTAssertThrowsError(try store.enqueue([outgoing(6, to: bob), outgoing(0, to: bob)], sender: me))
        try assertCountersMatchTheRows(store, "after a duplicate", lastSequence: 6)
        XCTAssertEqual(try store.enqueue([outgoing(6, to: bob)], sender: me).map(\.sequence), [7])

        // A transaction that moved every counter, read them back, then failed in its body.
        XCTAssertThrowsError(
            try store.write { db in
                try store.adjustCounter(db, .queued, by: 3)
                try store.adjustCounter(db, .delivered, by: -1)
                try store.adjustCounter(db, .received, by: 2)
                XCTAssertEqual(try store.reserveSequenceNumbers(db, count: 4), 8...11)
                XCTAssertEqual(
                    try store.insertEvents(
                        db,
                        [NewJournalEvent(at: 9, method: "x", peer: nil, messageRowID: nil, params: Array("{}".utf8))]),
                    [6])
                throw Injected()
            })
        try assertCountersMatchTheRows(store, "after a failure in a transaction's body", lastSequence: 7)

        // One that failed at COMMIT, after the counters' statement ran: a deferred foreign key.
        _ = try store.write { db in
            try db.execute(
                sql: """
                    CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY);
                    CREATE TEMP TABLE child (parent INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
                    """)
        }
        XCTAssertThrowsError(
            try store.write { db in
                _ = try store.reserveSequenceNumbers(db, count: 2)
                try store.adjustCounter(db, .queued, by: 1)
                _ = try store.insertEvents(
                    db, [NewJournalEvent(at: 9, method: "x", peer: nil, messageRowID: nil, params: Array("{}".utf8))])
                try db.execute(sql: "INSERT INTO child (parent) VALUES (42)")
            }
        ) { error in
            XCTAssertTrue("\(error)".lowercased().contains("foreign key"), "\(error)")
        }
        try assertCountersMatchTheRows(store, "after a failed COMMIT", lastSequence: 7)

        // The numbers the failed transactions reserved are handed out again, once.
        XCTAssertEqual(try store.nextSequenceNumbers(count: 2), 8...9)
        XCTAssertEqual(
            try store.appendEvents([
                NewJournalEvent(at: 10, method: "x", peer: nil, messageRowID: nil, params: Array("{}".utf8))
            ]), [6])
        _ = try store.enqueue([outgoing(7, to: alice)], sender: me)
        _ = try store.markDelivered([id(2), id(7), id(5)], by: alice, at: 11, journal: deliveredJournal)
        _ = try store.storeIncoming((100..<105).map(chat), from: alice, to: me, at: 12, journal: journal)
        XCTAssertEqual(try store.deleteConversation(with: alice), 11)
        try assertCountersMatchTheRows(store, "after a deleted conversation", lastSequence: 10)

        // What was committed is what a reopened store finds.
        try store.close()
        store = try Store(directory: directory)
        try assertCountersMatchTheRows(store, "reopened", lastSequence: 10)
        XCTAssertEqual(try store.nextSequenceNumbers(count: 1), 11...11)
        XCTAssertEqual(try store.enqueue([outgoing(8, to: bob)], sender: me).map(\.sequence), [12])
        try assertCountersMatchTheRows(store, "reopened, then a send", lastSequence: 12)
    }

    /// A counter moved outside any transaction (no ledger open) goes straight to the row;
    /// the ledger must then forget what it remembered, or the next send would be handed a
    /// sequence number already given out.
    func testACounterMovedOutsideATransactionIsNotShadowedByARememberedValue() throws {
        let store = try Store(directory: directory)
        XCTAssertEqual(try store.enqueue([outgoing(0, to: alice)], sender: me).map(\.sequence), [1])
        try store.database.writeWithoutTransaction { db in try store.adjustCounter(db, .lastSequence, by: 5) }
        XCTAssertEqual(
            try store.enqueue([outgoing(1, to: alice)], sender: me).map(\.sequence), [7],
            "the row's value (6), not the remembered one (1), is where the next sequence starts")
    }

    func testARolledBackTransactionLeavesNoDeltaAndForgetsWhatItRemembered() {
        var ledger = CounterLedger()
        ledger.begin()
        XCTAssertNil(ledger.value(.lastSequence))
        ledger.learn(10, for: .lastSequence)
        ledger.add(2, to: .lastSequence)
        ledger.add(1, to: .queued)
        XCTAssertEqual(ledger.value(.lastSequence), 12)
        XCTAssertTrue(ledger.hasPendingChanges)
        ledger.committed()
        XCTAssertFalse(ledger.isOpen)

        ledger.begin()
        XCTAssertFalse(ledger.hasPendingChanges)
        XCTAssertEqual(ledger.value(.lastSequence), 12, "remembered across a commit")
        ledger.add(5, to: .lastSequence)
        XCTAssertEqual(ledger.value(.lastSequence), 17)
        ledger.rolledBack()

        ledger.begin()
        XCTAssertNil(ledger.value(.lastSequence), "nothing remembered after a rollback")
        XCTAssertFalse(ledger.hasPendingChanges)
        XCTAssertEqual(ledger.flushArguments.count, CounterLedger.Name.allCases.count)
    }

    /// A plain connection with the functions the migrations' SQL calls.
    private func migrationQueue(_ path: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            Schema.registerSearchFunction(db)
            Schema.registerUnhexFunction(db)
        }
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    /// A store from before message-counters-one-row-v1 keeps every counter's value.
    func testTheCountersMoveToTheirOneRowOnUpgradeWithTheirValues() throws {
        let path = directory + "/" + Store.fileName
        let queue = try migrationQueue(path)
        try Schema.migrator.migrate(queue, upTo: Schema.leanMessagesMigration)
        try queue.write { db in
            let values: [String: Int64] = [
                Schema.Counter.lastSequence: 41, Schema.Counter.lastEventID: 73, Schema.Counter.queued: 3,
                Schema.Counter.delivered: 5, Schema.Counter.received: 7, Schema.Counter.eventsPrunedThrough: 70
            ]
            for (name, value) in values {
                try db.execute(sql: "UPDATE counter SET value = ? WHERE name = ?", arguments: [value, name])
            }
        }
        try queue.close()
        let store = try Store(directory: directory)
        XCTAssertEqual(try store.counts().queued, 3)
        XCTAssertEqual(try store.counts().delivered, 5)
        XCTAssertEqual(try store.counts().received, 7)
        XCTAssertEqual(try store.eventBounds().prunedThrough, 70)
        XCTAssertEqual(try store.eventBounds().last, 73)
        XCTAssertEqual(try store.nextSequenceNumbers(count: 1), 42...42)
        XCTAssertEqual(
            try store.appendEvents([
                NewJournalEvent(at: 1, method: "x", peer: nil, messageRowID: nil, params: Array("{}".utf8))
            ]),
            [74])
        let left = try store.read { db in try String.fetchAll(db, sql: "SELECT name FROM counter ORDER BY name") }
        XCTAssertEqual(left, [Schema.Counter.eventsPrunedThrough, Schema.Counter.searchIndexedThrough])
    }

    /// A store whose counters are damaged does not start with made-up values.
    func testAStoreMissingACounterFailsTheUpgrade() throws {
        let path = directory + "/" + Store.fileName
        let queue = try migrationQueue(path)
        try Schema.migrator.migrate(queue, upTo: Schema.leanMessagesMigration)
        try queue.write { db in
            try db.execute(sql: "DELETE FROM counter WHERE name = ?", arguments: [Schema.Counter.queued])
        }
        try queue.close()
        XCTAssertThrowsError(try Store(directory: directory))
    }
}
