import Foundation
import XCTest

@testable import ParleyStore

/// Signed room messages kept for room sync (issue 30): de-duplicated by (room, author,
/// sequence), a second different message for one sequence is a conflict (the first stays),
/// the author's next sequence, the ranges loaded at start; all across a reopen.
final class StoreRoomSyncTests: StoreDirectoryTestCase {
    private let room = String(repeating: "42", count: 16)
    private let alice = String(repeating: "a1", count: 32)
    private func id(_ n: UInt8) -> String { String(repeating: String(format: "%02x", n), count: 16) }

    func testSignedMessagesAreKeptOncePerSequenceAndTheFirstOfTwoDifferentWins() throws {
        var store: Store? = try Store(directory: directory)
        XCTAssertEqual(try store!.nextRoomSequence(room: room, author: alice), 1)
        XCTAssertEqual(
            try store!.insertSignedRoomMessage(
                room: room, author: alice, sequence: 1, id: id(1), encoded: [1, 2], at: 1),
            .inserted)
        XCTAssertEqual(
            try store!.insertSignedRoomMessage(
                room: room, author: alice, sequence: 1, id: id(1), encoded: [1, 2], at: 2),
            .duplicate)
        XCTAssertEqual(
            try store!.insertSignedRoomMessage(room: room, author: alice, sequence: 1, id: id(9), encoded: [9], at: 3),
            .conflict)
        XCTAssertEqual(
            try store!.insertSignedRoomMessage(room: room, author: alice, sequence: 3, id: id(3), encoded: [3], at: 4),
            .inserted)
        store = nil
        store = try Store(directory: directory)
        XCTAssertEqual(try store!.signedRoomMessages(room: room, author: alice, sequences: [3, 2, 1]), [[3], [1, 2]])
        XCTAssertEqual(try store!.signedRoomMessage(id: id(1), author: alice), [1, 2])
        XCTAssertNil(try store!.signedRoomMessage(id: id(9), author: alice))
        XCTAssertEqual(try store!.nextRoomSequence(room: room, author: alice), 4)
        XCTAssertEqual(try store!.signedRoomMessageSequences().map(\.sequence), [1, 3])
        XCTAssertThrowsError(
            try store!.insertSignedRoomMessage(room: room, author: alice, sequence: 0, id: id(4), encoded: [4], at: 5))
    }

    /// The author's own message and its signed form are stored in one transaction (one
    /// commit per message sent): both or neither.
    func testOwnMessageAndItsSignedFormAreStoredTogether() throws {
        let store = try Store(directory: directory)
        let bob = String(repeating: "b2", count: 32)
        func row(_ n: UInt8, sequence: UInt64) -> Store.SignedRoomMessageRow {
            Store.SignedRoomMessageRow(room: room, author: alice, sequence: sequence, id: id(n), encoded: [n])
        }
        let sent = try store.enqueueRoomMessage(
            id: id(1), room: room, body: "hi", createdAt: 1, sender: alice, members: [bob],
            signed: row(1, sequence: 1))
        XCTAssertEqual(sent.id.hex, id(1))
        XCTAssertEqual(try store.signedRoomMessage(id: id(1), author: alice), [1])
        XCTAssertEqual(try store.nextRoomSequence(room: room, author: alice), 2)
        // A signed form that reuses a sequence: the message is not stored either.
        XCTAssertThrowsError(
            try store.enqueueRoomMessage(
                id: id(2), room: room, body: "again", createdAt: 2, sender: alice, members: [bob],
                signed: row(2, sequence: 1)))
        XCTAssertNil(try store.message(id: id(2), sender: alice))
        // A signed form of another message is refused before anything is written.
        XCTAssertThrowsError(
            try store.enqueueRoomMessage(
                id: id(3), room: room, body: "x", createdAt: 3, sender: alice, members: [bob],
                signed: row(4, sequence: 2)))
        XCTAssertNil(try store.message(id: id(3), sender: alice))
    }

    /// A run of pipelined room messages is one transaction: all stored, or (one signed form
    /// reusing a sequence) none, and no sequence number is consumed.
    func testARunOfRoomMessagesIsStoredAllOrNone() throws {
        let store = try Store(directory: directory)
        let bob = String(repeating: "b2", count: 32)
        func message(_ n: UInt8, sequence: UInt64) -> Store.NewRoomMessage {
            Store.NewRoomMessage(
                id: id(n), room: room, body: "m\(n)", createdAt: Int64(n), members: [bob],
                signed: Store.SignedRoomMessageRow(
                    room: room, author: alice, sequence: sequence, id: id(n), encoded: [n]))
        }
        let stored = try store.enqueueRoomMessages([message(1, sequence: 1), message(2, sequence: 2)], sender: alice)
        XCTAssertEqual(stored.map(\.body), ["m1", "m2"])
        XCTAssertEqual(stored[1].sequence, stored[0].sequence + 1)
        XCTAssertThrowsError(
            try store.enqueueRoomMessages([message(3, sequence: 3), message(4, sequence: 2)], sender: alice))
        XCTAssertNil(try store.message(id: id(3), sender: alice), "the first of the failed run is not kept")
        XCTAssertEqual(try store.nextRoomSequence(room: room, author: alice), 3)
        let next = try store.enqueueRoomMessages([message(5, sequence: 3)], sender: alice)
        XCTAssertEqual(next[0].sequence, stored[1].sequence + 1, "the failed run consumed no sequence number")
    }
}
