import Foundation
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32 part 6: the message path inserts many rows per statement (`RowBatch`). Batches
/// that span several chunk sizes store and return exactly what one row at a time did: row
/// ids, bodies, the message key's conflicts and de-duplication.
final class MultiRowInsertTests: StoreDirectoryTestCase {
    private let me = try! IdentityPublicKey(bytes: Array(repeating: 0x3e, count: 32))
    private let peers = (1...5).map { try! IdentityPublicKey(bytes: Array(repeating: UInt8($0), count: 32)) }

    private func id(_ n: Int) -> MessageID {
        MessageID(bytes: Array(repeating: 0xa0, count: 12) + withUnsafeBytes(of: UInt32(n).bigEndian, Array.init))!
    }

    func testChunksCoverEveryRowInPowersOfTwoUpToTheMaximum() {
        XCTAssertEqual(Array(RowBatch.chunks(0)), [])
        XCTAssertEqual(Array(RowBatch.chunks(75)), [0..<32, 32..<64, 64..<72, 72..<74, 74..<75])
        for count in 0...300 {
            let chunks = Array(RowBatch.chunks(count))
            XCTAssertEqual(chunks.flatMap { Array($0) }, Array(0..<count), "count \(count)")
            for chunk in chunks {
                XCTAssertTrue(chunk.count <= RowBatch.maxRows && chunk.count.nonzeroBitCount == 1, "\(chunk)")
            }
            // Full chunks first, then each smaller size at most once.
            XCTAssertEqual(
                chunks.filter { $0.count < RowBatch.maxRows }.count, (count % RowBatch.maxRows).nonzeroBitCount)
        }
    }

    func testABatchOfSeveralChunksStoresAndReturnsEveryMessageExactly() throws {
        let store = try Store(directory: directory)
        _ = try store.enqueue(
            [NewOutgoingMessage(id: id(1000), recipient: peers[0], body: "before", createdAt: 1)], sender: me)
        let batch = (0..<75).map { n in
            NewOutgoingMessage(
                id: id(n), recipient: peers[n % peers.count], body: "body \(n) " + String(repeating: "é", count: n),
                createdAt: Int64(100 + n), replyTo: n % 7 == 0 ? id(1000) : nil)
        }
        let returned = try store.enqueue(batch, sender: me)
        XCTAssertEqual(returned.map(\.id), batch.map(\.id))
        XCTAssertEqual(returned.map(\.body), batch.map(\.body))
        XCTAssertEqual(returned.map(\.sequence), Array(2...76))
        XCTAssertEqual(Set(returned.map(\.rowID)).count, 75)
        XCTAssertEqual(returned.map(\.rowID), returned.map(\.rowID).sorted(), "rows in batch order")
        for message in returned {
            XCTAssertEqual(try store.message(id: message.id, sender: me), message)
        }
        XCTAssertEqual(try store.counts().queued, 76)
        let toFirst = try store.pendingOutgoing(to: peers[0], limit: 100)
        XCTAssertEqual(toFirst.count, 16)
        XCTAssertEqual(Array(toFirst.dropFirst()), returned.filter { $0.recipient == .peer(peers[0]) })
        // Found by search: the bodies went in under their own rows.
        XCTAssertEqual(try store.search("74", scope: .everything, limit: 10).hits.map(\.message.id), [id(74)])
    }

    func testADuplicateInALaterChunkFailsTheWholeBatchNamingIt() throws {
        let store = try Store(directory: directory)
        _ = try store.enqueue(
            [NewOutgoingMessage(id: id(500), recipient: peers[0], body: "first", createdAt: 1)], sender: me)
        // Stored before, in the second chunk.
        var batch = (0..<40).map { NewOutgoingMessage(id: id($0), recipient: peers[1], body: "\($0)", createdAt: 2) }
        batch[35].id = id(500)
        XCTAssertThrowsError(try store.enqueue(batch, sender: me)) { error in
            XCTAssertEqual(
                error as? StoreError, .conflict("message id \(id(500).hex) from \(me.hex) is already stored"))
        }
        // Twice in the batch: once in the first chunk, once in the second.
        batch[35].id = id(3)
        XCTAssertThrowsError(try store.enqueue(batch, sender: me)) { error in
            XCTAssertEqual(error as? StoreError, .conflict("message id \(id(3).hex) from \(me.hex) is already stored"))
        }
        // Twice in one chunk.
        batch[35].id = id(36)
        XCTAssertThrowsError(try store.enqueue(batch, sender: me)) { error in
            XCTAssertEqual(error as? StoreError, .conflict("message id \(id(36).hex) from \(me.hex) is already stored"))
        }
        XCTAssertNil(try store.message(id: id(0)), "the batch rolls back as a whole")
        XCTAssertEqual(try store.counts().queued, 1)
        XCTAssertEqual(try store.nextSequenceNumbers(count: 1), 2...2)
    }

    func testIncomingChunksWithMessagesStoredBeforeAndRepeatedComeBackAsStored() throws {
        let store = try Store(directory: directory)
        let sender = peers[2]
        func chat(_ n: Int, _ body: String) -> ReceivedChat {
            ReceivedChat(id: id(n), sequence: Int64(n), createdAt: Int64(n), body: body, replyTo: nil)
        }
        // Stored before: the first row of the first chunk, one in the second, the last.
        let before = try store.storeIncoming(
            [chat(0, "old 0"), chat(33, "old 33"), chat(69, "old 69")], from: sender, to: me, at: 5, journal: nil)
        XCTAssertEqual(before.map(\.isNew), [true, true, true])
        var chats = (0..<70).map { chat($0, "new \($0)") }
        chats[41] = chat(40, "again 40")  // the same key twice in one chunk: the first wins
        let journal = try MessageJournal(method: "message.received", at: 9)
        let results = try store.storeIncoming(chats, from: sender, to: me, at: 10, journal: journal)
        let old: Set<Int> = [0, 33, 41, 69]
        XCTAssertEqual(results.map(\.isNew), (0..<70).map { !old.contains($0) })
        for (k, result) in results.enumerated() {
            let n = k == 41 ? 40 : k
            let stored = try XCTUnwrap(try store.message(id: id(n), sender: sender))
            XCTAssertEqual(result.message.rowID, stored.rowID, "message \(k)")
            XCTAssertEqual(result.message.body, stored.body, "message \(k)")
            XCTAssertEqual(result.message.body, [0, 33, 69].contains(k) ? "old \(k)" : "new \(n)")
            XCTAssertEqual(result.message.receivedAt, [0, 33, 69].contains(k) ? 5 : 10)
            XCTAssertEqual(result.message.journalEventID == nil, old.contains(k), "message \(k)")
            if !old.contains(k) {
                var expected = stored
                expected.journalEventID = result.message.journalEventID
                XCTAssertEqual(result.message, expected, "message \(k)")
            }
        }
        XCTAssertEqual(try store.counts().received, 69)
        let again = try store.storeIncoming(chats, from: sender, to: me, at: 20, journal: nil)
        XCTAssertEqual(again.map(\.isNew), Array(repeating: false, count: 70))
        XCTAssertEqual(try store.counts().received, 69)
    }

    func testALongAckMarksEachMessageOnceInItsOrder() throws {
        let store = try Store(directory: directory)
        let alice = peers[0]
        let bob = peers[1]
        let toAlice = try store.enqueue(
            (0..<40).map { NewOutgoingMessage(id: id($0), recipient: alice, body: "\($0)", createdAt: 1) }, sender: me)
        _ = try store.enqueue(
            [NewOutgoingMessage(id: id(100), recipient: bob, body: "bob's", createdAt: 1)], sender: me)
        // Reversed, with repeats, an unknown id and bob's message (not alice's to acknowledge).
        var ack = (0..<40).reversed().map { id($0) }
        ack.insert(id(7), at: 3)
        ack.insert(id(999), at: 10)
        ack.insert(id(100), at: 20)
        ack.append(id(39))
        let journal = try MessageJournal(method: "message.delivered", at: 3)
        let changed = try store.markDelivered(ack, by: alice, at: 50, journal: journal)
        // In the ack's order of first mention.
        var mentioned: Set<MessageID> = []
        let expected = ack.filter { $0 != id(999) && $0 != id(100) && mentioned.insert($0).inserted }
        XCTAssertEqual(expected.count, 40)
        XCTAssertEqual(changed.map(\.id), expected)
        let rows = Dictionary(uniqueKeysWithValues: toAlice.map { ($0.id, $0.rowID) })
        XCTAssertEqual(changed.map(\.rowID), expected.map { rows[$0] })
        XCTAssertTrue(changed.allSatisfy { $0.deliveredAt == 50 && $0.recipient == .peer(alice) && $0.room == nil })
        XCTAssertEqual(changed.compactMap(\.journalEventID).count, 40)
        for message in toAlice {
            let stored = try XCTUnwrap(try store.message(id: message.id, sender: me))
            XCTAssertEqual([stored.state == .delivered, stored.deliveredAt == 50], [true, true], "\(message.id)")
        }
        XCTAssertEqual(try store.message(id: id(100), sender: me)?.state, .queued)
        let counts = try store.counts()
        XCTAssertEqual([counts.queued, counts.delivered], [1, 40])
        XCTAssertEqual(
            try store.markDelivered(ack, by: alice, at: 60, journal: nil), [], "an ack repeated changes nothing")
        // One id alone.
        XCTAssertEqual(try store.markDelivered([id(100)], by: bob, at: 70, journal: nil).map(\.id), [id(100)])
        XCTAssertEqual(try store.counts().queued, 0)
    }
}
