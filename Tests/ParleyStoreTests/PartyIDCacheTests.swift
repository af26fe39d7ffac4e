import Foundation
import XCTest

@testable import ParleyStore

/// The store keeps the party ids of keys it looked up (`Store.partyIDs`). A party added by
/// a transaction that then failed is gone (SQLite may give its id to the next new key), so
/// the cache must never hand that id out again.
final class PartyIDCacheTests: StoreDirectoryTestCase {
    private let me = String(repeating: "1", count: 64)
    private let x = String(repeating: "2", count: 64)
    private let y = String(repeating: "3", count: 64)
    private func id(_ n: Int) -> String { String(format: "%032x", n) }

    func testAPartyAddedByAFailedBatchIsNotRememberedForAnotherKey() throws {
        let store = try Store(directory: directory)
        _ = try store.enqueue([NewOutgoingMessage(id: id(1), recipient: me, body: "first", createdAt: 1)], sender: me)
        // x is new: added, then found again by the batch's second message, then the batch
        // fails on a duplicate id and rolls back (x's party with it).
        XCTAssertThrowsError(
            try store.enqueue(
                [
                    NewOutgoingMessage(id: id(2), recipient: x, body: "a", createdAt: 1),
                    NewOutgoingMessage(id: id(3), recipient: x, body: "b", createdAt: 1),
                    NewOutgoingMessage(id: id(1), recipient: x, body: "dup", createdAt: 1)
                ], sender: me))
        // y is new now and may get the id x had.
        _ = try store.enqueue([NewOutgoingMessage(id: id(4), recipient: y, body: "to y", createdAt: 1)], sender: me)
        _ = try store.enqueue([NewOutgoingMessage(id: id(5), recipient: x, body: "to x", createdAt: 1)], sender: me)
        XCTAssertEqual(try store.pendingOutgoing(to: x, limit: 10).map(\.body), ["to x"])
        XCTAssertEqual(try store.pendingOutgoing(to: y, limit: 10).map(\.body), ["to y"])
        XCTAssertEqual(try store.message(id: id(5), sender: me)?.recipient.hex, x)
    }

    /// The cache's keys hash their bytes as one buffer (issue 32 part 11): equal keys find
    /// each other, a room id (16 bytes) and an identity (32) that share a prefix do not, and
    /// an incoming batch from two senders files each row under its own sender.
    func testPartyKeysOfEitherLengthAreFoundAgainAndKeptApart() throws {
        let identity = [UInt8](repeating: 7, count: 32)
        let room = [UInt8](repeating: 7, count: 16)
        XCTAssertEqual(PartyKey(identity), PartyKey(Array(identity)))
        XCTAssertEqual(PartyKey(identity).hashValue, PartyKey(Array(identity)).hashValue)
        let cache: [PartyKey: Int64] = [PartyKey(identity): 1, PartyKey(room): 2]
        XCTAssertEqual(cache[PartyKey(Array(identity))], 1)
        XCTAssertEqual(cache[PartyKey(Array(room))], 2)

        let store = try Store(directory: directory)
        func incoming(_ n: Int, from sender: String) -> IncomingMessage {
            IncomingMessage(id: id(n), sender: sender, recipient: me, sequence: Int64(n), createdAt: 1, body: "m\(n)")
        }
        let batch = [incoming(1, from: x), incoming(2, from: y), incoming(3, from: x), incoming(4, from: y)]
        _ = try store.storeIncoming(batch, at: 2)
        for (n, sender) in [(1, x), (2, y), (3, x), (4, y)] {
            XCTAssertEqual(try store.message(id: id(n), sender: sender)?.body, "m\(n)")
            XCTAssertEqual(try store.message(id: id(n), sender: sender)?.peer.hex, sender)
        }
    }
}
