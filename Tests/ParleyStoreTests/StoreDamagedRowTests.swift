import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// One damaged row (changed with the sqlite3 program while no store has the file open, as
/// damage or a bad edit outside parleyd would, CHECK constraints off) is left out of every
/// read of many rows, named, and told to `Store.unreadableRows` once; the good rows are all
/// read. Each of these reads failed whole before (`Store.decodeRows`).
final class StoreDamagedRowTests: StoreDirectoryTestCase {
    private let me = String(repeating: "01", count: 32)
    private let alice = String(repeating: "a1", count: 32)
    private let bob = String(repeating: "b0", count: 32)
    private var aliceKey: IdentityPublicKey { IdentityPublicKey(hex: alice)! }

    private func messageID(_ n: Int) -> String { String(format: "%032x", n) }

    private func open() throws -> Store { try Store(directory: directory, durability: .normal) }

    private func damage(_ sql: String) throws { try damageStore(in: directory, sql) }

    private func incoming(_ store: Store, _ n: Int, from peer: String? = nil, body: String) throws -> Int64 {
        let m = IncomingMessage(
            id: messageID(n), sender: peer ?? alice, recipient: me, sequence: Int64(n), createdAt: Int64(n), body: body)
        return try store.storeIncoming([m], at: Int64(n))[0].message.rowID
    }

    private func outgoing(_ store: Store, _ n: Int, to peer: String? = nil, body: String) throws -> Int64 {
        let m = NewOutgoingMessage(id: messageID(n), recipient: peer ?? alice, body: body, createdAt: Int64(n))
        return try store.enqueue([m], sender: me)[0].rowID
    }

    /// Search returns the other hits and names the damaged one; the row is reported once
    /// however often it is read.
    func testSearchLeavesADamagedRowOutAndNamesItAndReportsItOnce() throws {
        var store = try open()
        let rows = [
            try incoming(store, 1, body: "apple one"), try incoming(store, 3, body: "apple two"),
            try incoming(store, 5, body: "apple three")
        ]
        try store.close()
        try damage("UPDATE message SET id = x'0102' WHERE row_id = \(rows[1])")
        store = try open()
        let reported = Reported()
        store.unreadableRows.report { reported.add($0) }

        let found = try store.search("apple", scope: .everything, limit: 10)
        XCTAssertEqual(Set(found.hits.map(\.message.body)), ["apple one", "apple three"])
        XCTAssertEqual(found.unreadable.map(\.rowID), [rows[1]])
        XCTAssertTrue(found.unreadable[0].problem.contains("message.id"), "\(found.unreadable)")
        XCTAssertFalse(found.unreadable[0].problem.contains("apple"), "never the row's content")
        // The limit counts good hits: the damaged one does not take a place.
        XCTAssertEqual(try store.search("apple", scope: .everything, limit: 2).hits.count, 2)

        _ = try store.search("apple", scope: .peer(aliceKey), limit: 10)
        XCTAssertEqual(reported.rows.map(\.rowID), [rows[1]], "reported once, however often read")
        XCTAssertEqual(store.unreadableRows.distinctRows, 1)
        XCTAssertGreaterThanOrEqual(store.unreadableRows.skippedReads, 3)
    }

    /// Lookups by id or prefix: a damaged row is named (the caller says it is damaged, or
    /// counts it for ambiguity), never an error for the whole lookup, never another message.
    func testIDLookupsNameADamagedRowAndNeverFail() throws {
        var store = try open()
        let row = try incoming(store, 7, body: "to be damaged")
        _ = try incoming(store, 9, body: "intact")
        try store.close()
        try damage("UPDATE message SET state = 9 WHERE row_id = \(row)")
        store = try open()

        let byPrefix = try store.messages(idPrefix: messageID(7))
        XCTAssertEqual(byPrefix.records, [])
        XCTAssertEqual(byPrefix.unreadable.map(\.rowID), [row])
        XCTAssertTrue(byPrefix.unreadable[0].problem.contains("message.state"))
        XCTAssertNil(try store.message(id: MessageID(hex: messageID(7))!))
        XCTAssertEqual(try store.messages(id: MessageID(hex: messageID(7))!, limit: 4), [])
        XCTAssertEqual(try store.messages(rowIDs: [row, row + 1]).keys.sorted(), [row + 1])
        // A prefix both share ("000...0") counts the damaged row: two, ambiguous.
        let shared = try store.messages(idPrefix: String(repeating: "0", count: 30))
        XCTAssertEqual(shared.records.count + shared.unreadable.count, 2)
    }

    /// The outbox steps over a damaged queued row: the messages after it are read (the
    /// pump's cursor moves on), even when a page holds only the damaged one; it stays queued.
    func testTheOutboxStepsOverADamagedQueuedRow() throws {
        var store = try open()
        let rows = [
            try outgoing(store, 2, body: "first"), try outgoing(store, 4, body: "second"),
            try outgoing(store, 6, body: "third")
        ]
        _ = try outgoing(store, 8, to: bob, body: "to bob")
        try store.close()
        try damage("UPDATE message SET id = x'0102' WHERE row_id = \(rows[0])")
        store = try open()

        XCTAssertEqual(try store.pendingOutgoing(to: aliceKey, limit: 1).map(\.body), ["second"])
        XCTAssertEqual(try store.pendingOutgoing(to: aliceKey, limit: 10).map(\.body), ["second", "third"])
        let counts = try store.pendingRecipients()
        XCTAssertEqual(counts[aliceKey], 3, "still queued: nothing is lost")
        XCTAssertEqual(counts[IdentityPublicKey(hex: bob)!], 1)
    }

    /// A queued row whose recipient is damaged (its party's key) leaves that count out, not
    /// every count: the daemon reads them at start and before the first send.
    func testQueuedAndUnreadCountsLeaveADamagedPartyOut() throws {
        var store = try open()
        _ = try outgoing(store, 2, body: "to alice")
        _ = try outgoing(store, 4, to: bob, body: "to bob")
        _ = try incoming(store, 5, body: "from alice")
        _ = try incoming(store, 7, from: bob, body: "from bob")
        try store.close()
        try damage("UPDATE party SET key = x'0102' WHERE key = x'\(bob)'")
        store = try open()

        XCTAssertEqual(try store.pendingRecipients(), [aliceKey: 1])
        XCTAssertEqual(try store.unreadCounts(), [aliceKey: 1])
    }

    /// A message received again whose stored copy is damaged is the duplicate it is: no
    /// error (which left it unacknowledged, and the sender's outbox stalled on it).
    func testARedeliveredMessageWhoseStoredCopyIsDamagedIsADuplicate() throws {
        var store = try open()
        let row = try incoming(store, 3, body: "hello")
        try store.close()
        try damage("UPDATE message SET state = 9 WHERE row_id = \(row)")
        store = try open()

        let again = IncomingMessage(
            id: messageID(3), sender: alice, recipient: me, sequence: 3, createdAt: 3, body: "hello")
        let result = try store.storeIncoming([again, IncomingMessage(
            id: messageID(5), sender: alice, recipient: me, sequence: 5, createdAt: 5, body: "next")], at: 10)
        XCTAssertEqual(result.map(\.isNew), [false, true])
        XCTAssertEqual(result[0].message.rowID, row)
    }

    /// Read receipts owed for a damaged row do not hold back the others.
    func testReadReceiptsStepOverADamagedRow() throws {
        var store = try open()
        let rows = [try incoming(store, 1, body: "a"), try incoming(store, 3, body: "b")]
        _ = try store.markIncomingRead(from: aliceKey, upTo: nil, at: 20, queueReceipts: true)
        try store.close()
        try damage("UPDATE message SET id = x'0102' WHERE row_id = \(rows[0])")
        store = try open()

        XCTAssertEqual(try store.pendingReadReceipts(to: aliceKey, limit: 1).map(\.hex), [messageID(3)])
        XCTAssertEqual(try store.peersOwedReadReceipts(), [aliceKey])
    }

    /// Room sync's held sequences, read at start: a damaged row is left out, not every
    /// room's (sync would start empty and offer a member nothing).
    func testRoomSyncSequencesLeaveADamagedRowOut() throws {
        var store = try open()
        let room = RoomID(hex: String(repeating: "c3", count: 16))!
        for s in 1...3 {
            XCTAssertEqual(
                try store.insertSignedRoomMessage(
                    room: room, author: aliceKey, sequence: UInt64(s), id: MessageID(hex: messageID(s))!,
                    encoded: [UInt8(s)], at: 1), .inserted)
        }
        try store.close()
        try damage("UPDATE room_signed_message SET author = 'not a key' WHERE room_sequence = 2")
        store = try open()

        XCTAssertEqual(try store.signedRoomMessageSequences().map(\.sequence), [1, 3])
    }
}

/// What the report handler heard (it may be called from any thread).
private final class Reported: @unchecked Sendable {
    private let lock = NSLock()
    private var heard: [UnreadableRow] = []
    func add(_ row: UnreadableRow) { lock.withLock { heard.append(row) } }
    var rows: [UnreadableRow] { lock.withLock { heard } }
}
