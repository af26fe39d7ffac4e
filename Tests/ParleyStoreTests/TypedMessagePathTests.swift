import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32: the message path's store calls take typed ids and keys (`ReceivedChat`,
/// `MessageID`, `IdentityPublicKey`) and store exactly what the hex-string forms store.
final class TypedMessagePathTests: StoreDirectoryTestCase {
    func testTypedIncomingStoresWhatTheHexFormStoresAndDeduplicatesAcrossForms() throws {
        let store = try Store(directory: directory)
        let sender = try IdentityPublicKey(bytes: Array(repeating: 0x5e, count: 32))
        let me = try IdentityPublicKey(bytes: Array(repeating: 0x3e, count: 32))
        let id = MessageID(bytes: Array(repeating: 0x11, count: 16))!
        let reply = MessageID(bytes: Array(repeating: 0x22, count: 16))!
        let chat = ReceivedChat(id: id, sequence: 7, createdAt: 70, body: "typed", replyTo: reply)
        let typed = try store.storeIncoming([chat], from: sender, to: me, at: 100, journal: nil)
        XCTAssertEqual(typed.map { $0.isNew }, [true])
        let stored = try XCTUnwrap(try store.message(id: id.hex, sender: sender.hex))
        XCTAssertEqual(stored, typed[0].message)
        XCTAssertEqual(
            [stored.id.hex, stored.sender.hex, stored.recipient.hex, stored.replyTo?.hex],
            [id.hex, sender.hex, me.hex, reply.hex])
        XCTAssertEqual([stored.sequence, stored.createdAt, stored.receivedAt], [7, 70, 100])
        // The hex form of the same chat is the same message: a duplicate, not a second row.
        let again = try store.storeIncoming(
            [
                IncomingMessage(
                    id: id.hex, sender: sender.hex, recipient: me.hex, sequence: 7, createdAt: 70, body: "typed",
                    replyTo: reply.hex)
            ], at: 200)
        XCTAssertEqual(again.map { $0.isNew }, [false])
        XCTAssertEqual(again.first?.message, stored)
        XCTAssertEqual(try store.counts().received, 1)
    }

    /// An outgoing room message names its room as its recipient (`MessageParty.room`),
    /// read back the same; the outbox's per-peer counts name peers only.
    func testARoomMessageNamesItsRoomAndTheQueueCountsNamePeersOnly() throws {
        let store = try Store(directory: directory)
        let me = try IdentityPublicKey(bytes: Array(repeating: 0x3e, count: 32))
        let bob = try IdentityPublicKey(bytes: Array(repeating: 0xb0, count: 32))
        let room = RoomID(exactly: Array(repeating: 0x77, count: 16))
        let roomMessage = try store.enqueueRoomMessage(
            id: .random(), room: room, body: "to the room", createdAt: 1, sender: me, members: [bob])
        XCTAssertEqual(roomMessage.recipient, .room(room))
        XCTAssertEqual(roomMessage.conversation, .room(room))
        XCTAssertEqual(try store.message(id: roomMessage.id, sender: me), roomMessage)
        let direct = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob, body: "to bob", createdAt: 2)], sender: me)
        XCTAssertEqual(direct[0].recipient, .peer(bob))
        XCTAssertEqual(direct[0].peer.peerKey, bob)
        XCTAssertEqual(try store.message(id: direct[0].id), direct[0])
        XCTAssertEqual(try store.pendingRecipients(), [bob: 1], "the room's queued message is not a peer's")
        XCTAssertEqual(try store.pendingOutgoing(to: bob, limit: 10), direct)
    }

    /// A message row whose stored key has the wrong length is a damaged store, reported as
    /// such: never a trap, never a key of another kind.
    func testAStoredKeyOfTheWrongLengthIsCorruptNotATrap() throws {
        var store: Store? = try Store(directory: directory)
        let sender = try IdentityPublicKey(bytes: Array(repeating: 0x5e, count: 32))
        let me = try IdentityPublicKey(bytes: Array(repeating: 0x3e, count: 32))
        let chat = ReceivedChat(id: .random(), sequence: 1, createdAt: 1, body: "hi")
        _ = try store!.storeIncoming([chat], from: sender, to: me, at: 1, journal: nil)
        store = nil
        let queue = try DatabaseQueue(path: directory + "/" + Store.fileName)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE party SET key = ? WHERE key = ?",
                arguments: [Data(repeating: 0x01, count: 16), Data(sender.bytes)])
        }
        try queue.close()
        store = try Store(directory: directory)
        // Left out of the read and named (StoreDamagedRowTests): never a key of another kind.
        let heard = HeardRows()
        store!.unreadableRows.report { heard.add($0) }
        XCTAssertNil(try store!.message(id: chat.id))
        XCTAssertTrue(heard.rows.first?.problem.contains("message.sender") == true, "\(heard.rows)")
    }
}
