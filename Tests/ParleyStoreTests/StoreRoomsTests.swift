import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Rooms in the store, on a real SQLite file: operations and their outbox, resolved state,
/// room messages with their per-member fan-out.
final class StoreRoomsTests: StoreDirectoryTestCase {
    private let me = hex(0x01, 32)
    private let bob = hex(0xb0, 32)
    private let carol = hex(0xc4, 32)
    private let room = hex(0xaa, 16)

    private static func hex(_ byte: UInt8, _ count: Int) -> String {
        String(repeating: String(format: "%02x", byte), count: count)
    }

    private func messageID(_ n: Int) -> String { String(format: "%032x", n) }
    /// Distinct in their first 16 bytes, like real hashes (the ack id is that prefix).
    private func opHash(_ n: Int) -> String { Self.hex(UInt8(n), 32) }

    private func open() throws -> Store { try Store(directory: directory, durability: .normal) }

    /// The typed keys the room API takes for the hex fixtures.
    private func key(_ hex: String) -> IdentityPublicKey { StoredKeyFixture.key(hex) }
    private func roomID(_ hex: String) -> RoomID { RoomID(hex: hex)! }
    private func op(_ n: Int) -> RoomOperationHash { RoomOperationHash(hex: opHash(n))! }
    private func ack(_ n: Int) -> MessageID { op(n).ackID }

    private func send(_ store: Store, _ n: Int, to members: [String]) throws -> StoredMessage {
        try store.enqueueRoomMessage(
            id: messageID(n), room: room, body: "room \(n)", createdAt: 100 + Int64(n),
            sender: me, members: members)
    }

    // MARK: - Room messages

    func testRoomMessageIsDeliveredWhenTheLastMemberAcknowledges() throws {
        let store = try open()
        let m = try send(store, 1, to: [bob, carol])
        XCTAssertEqual(m.state, .queued)
        XCTAssertEqual(m.room?.hex, room)
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10).map(\.id), [m.id])
        XCTAssertEqual(try store.pendingRoomMessages(to: carol, limit: 10).map(\.id), [m.id])
        XCTAssertEqual(try store.counts().queued, 1)
        XCTAssertEqual(try store.queuedRoomMessageCount(room: room), 1)

        XCTAssertEqual(try store.markRoomDeliveries(ids: [m.id.hex], by: bob, at: 500), [])
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10), [])
        XCTAssertEqual(
            try store.markRoomDeliveries(ids: [m.id.hex], by: bob, at: 501), [], "a repeated ack changes nothing")
        let done = try store.markRoomDeliveries(ids: [m.id.hex], by: carol, at: 600)
        XCTAssertEqual(done.map(\.id.hex), [m.id.hex])
        XCTAssertEqual(done.first?.state, .delivered)
        XCTAssertEqual(done.first?.deliveredAt, 600)
        XCTAssertEqual(try store.counts().queued, 0)
        XCTAssertEqual(try store.counts().delivered, 1)
        XCTAssertEqual(try store.queuedRoomMessageCount(room: room), 0)
    }

    /// Delivery state that says the truth (issue 30): who holds a room message, from acks
    /// and from members' summaries; a summary from a non-recipient changes nothing.
    func testHoldersComeFromAcksAndSummaries() throws {
        let store = try open()
        var sent: [StoredMessage] = []
        for n in 1...3 {
            let m = try send(store, n, to: [bob, carol])
            _ = try store.insertSignedRoomMessage(
                room: room, author: me, sequence: UInt64(n), id: m.id.hex, encoded: [UInt8(n)], at: 100)
            sent.append(m)
        }
        XCTAssertEqual(try store.roomHolders(ofRows: [sent[0].rowID])[sent[0].rowID]?.held.count, 0)
        XCTAssertEqual(try store.roomHolders(ofRows: [sent[0].rowID])[sent[0].rowID]?.members, 2)
        // Carol acknowledges the first: held by carol, not delivered yet.
        let ack = try store.acknowledgeRoomTraffic(ids: [sent[0].id.hex], by: carol, at: 200)
        XCTAssertEqual(ack.held.map(\.id.hex), [sent[0].id.hex])
        XCTAssertEqual(ack.delivered, [])
        XCTAssertEqual(try store.roomHolders(ofRows: [sent[0].rowID])[sent[0].rowID]?.held.map(\.member.hex), [carol])
        // A stranger's summary changes nothing.
        let stranger = Self.hex(0xee, 32)
        XCTAssertTrue(
            try store.markRoomMessagesHeld(room: room, author: me, ranges: [1...3], by: stranger, at: 250).isEmpty)
        // Bob's summary lists 1 ... 2 (he got them from carol): 1 is delivered, 2 held by bob.
        let summary = try store.markRoomMessagesHeld(room: room, author: me, ranges: [1...2], by: bob, at: 300)
        XCTAssertEqual(summary.delivered.map(\.id), [sent[0].id])
        XCTAssertEqual(summary.held.map(\.id), [sent[1].id])
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10).map(\.id), [sent[2].id])
        XCTAssertEqual(
            try store.roomHolders(ofRows: [sent[0].rowID])[sent[0].rowID]?.held.map(\.member.hex), [carol, bob])
        // Again: nothing changes.
        XCTAssertTrue(try store.markRoomMessagesHeld(room: room, author: me, ranges: [1...2], by: bob, at: 301).isEmpty)
        XCTAssertEqual(try store.roomHolders(ofRows: [999]), [:])
    }

    func testAnAckFromANonRecipientChangesNothing() throws {
        let store = try open()
        let m = try send(store, 1, to: [bob])
        XCTAssertEqual(try store.markRoomDeliveries(ids: [m.id.hex], by: carol, at: 1), [])
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10).map(\.id), [m.id])
        // A direct-message ack path does not touch room messages either.
        XCTAssertEqual(try store.markDelivered(ids: [m.id.hex], by: bob, at: 1), [])
    }

    func testRoomOfOneIsDeliveredAtOnce() throws {
        let store = try open()
        let m = try send(store, 1, to: [])
        XCTAssertEqual(m.state, .delivered)
        XCTAssertEqual(try store.counts().delivered, 1)
    }

    /// A message written before anyone else joined is queued for the invited (not
    /// "delivered" to nobody), held back from each until the room says it joined, and then
    /// delivered like any other; a joined member's messages are not held up meanwhile.
    func testAMessageForTheInvitedWaitsUntilEachJoins() throws {
        let store = try open()
        var record = RoomRecord(
            id: roomID(room), root: op(1), name: "lab", creator: key(me), createdAt: 1, version: 1,
            members: [key(me), key(bob), key(carol)], status: .joined,
            roles: [key(me): .owner, key(bob): .member, key(carol): .member], joined: [key(me)], onlyAdminsAdd: false,
            updatedAt: 2)
        try store.saveRoom(record)
        let welcome = try send(store, 1, to: [bob, carol])
        XCTAssertEqual(welcome.state, .queued)
        XCTAssertEqual(try store.roomHolders(ofRows: [welcome.rowID])[welcome.rowID]?.members, 2)
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10), [], "bob has not joined")
        XCTAssertEqual(try store.pendingRoomMessages(to: carol, limit: 10), [])

        record.joined = [key(me), key(bob)]
        record.version = 2
        try store.saveRoom(record)
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10).map(\.id), [welcome.id])
        XCTAssertEqual(try store.pendingRoomMessages(to: carol, limit: 10), [], "carol has not joined")
        XCTAssertEqual(
            try store.acknowledgeRoomTraffic(ids: [welcome.id.hex], by: bob, at: 300).held.map(\.id.hex),
            [welcome.id.hex])
        record.joined = [key(me), key(bob), key(carol)]
        record.version = 3
        try store.saveRoom(record)
        XCTAssertEqual(try store.pendingRoomMessages(to: carol, limit: 10).map(\.id), [welcome.id])
        XCTAssertEqual(
            try store.acknowledgeRoomTraffic(ids: [welcome.id.hex], by: carol, at: 400).delivered.map(\.id.hex),
            [welcome.id.hex])
    }

    func testPendingRoomMessagesComeInSequenceOrderAfterDirectOnesShareTheCounter() throws {
        let store = try open()
        let direct = try store.enqueue(
            [NewOutgoingMessage(id: messageID(9), recipient: bob, body: "direct", createdAt: 1)], sender: me)
        let a = try send(store, 1, to: [bob])
        let b = try send(store, 2, to: [bob])
        XCTAssertLessThan(direct[0].sequence, a.sequence)
        XCTAssertLessThan(a.sequence, b.sequence)
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 10).map(\.id), [a.id, b.id])
        XCTAssertEqual(try store.pendingRoomMessages(to: bob, limit: 1).map(\.id), [a.id])
        XCTAssertEqual(
            try store.pendingOutgoing(to: bob, limit: 10).map(\.id), [direct[0].id],
            "room messages are not in the direct outbox")
    }

    func testIncomingRoomMessagesAreDeduplicatedAndKeptOutOfDirectHistory() throws {
        let store = try open()
        let incoming = IncomingMessage(
            id: messageID(1), sender: bob, recipient: me, sequence: 3, createdAt: 4, body: "hi room")
        let first = try store.storeIncomingRoomMessages([incoming], room: room, at: 10)
        XCTAssertEqual(first.map(\.isNew), [true])
        XCTAssertEqual(first[0].message.room?.hex, room)
        XCTAssertEqual(try store.storeIncomingRoomMessages([incoming], room: room, at: 11).map(\.isNew), [false])
        _ = try store.storeIncoming(
            [
                IncomingMessage(
                    id: messageID(2), sender: bob, recipient: me, sequence: 5,
                    createdAt: 6, body: "direct")
            ], at: 12)
        XCTAssertEqual(try store.roomMessages(room: room, after: nil, limit: 10).map(\.body), ["hi room"])
        XCTAssertEqual(try store.messages(peer: bob, after: nil, limit: 10).map(\.body), ["direct"])
        XCTAssertEqual(try store.messages(peer: nil, after: nil, limit: 10).map(\.body), ["hi room", "direct"])
        XCTAssertEqual(try store.counts().received, 2)
    }

    func testRoomHistoryPagesLikeDirectHistory() throws {
        let store = try open()
        let sent = try (1...5).map { try send(store, $0, to: [bob]) }
        let last2 = try store.roomMessages(room: room, after: nil, before: sent[4].rowID + 1, limit: 2)
        XCTAssertEqual(last2.map(\.id), [sent[3].id, sent[4].id])
        let next = try store.roomMessages(room: room, after: sent[1].rowID, limit: 2)
        XCTAssertEqual(next.map(\.id), [sent[2].id, sent[3].id])
    }

    // MARK: - Operations and state

    func testOperationsAreStoredOnceAndListedInSequenceOrder() throws {
        let store = try open()
        XCTAssertTrue(
            try store.insertRoomOperation(
                StoredRoomOperation(hash: op(2), room: roomID(room), sequence: 2, encoded: [2]), at: 1))
        XCTAssertTrue(
            try store.insertRoomOperation(
                StoredRoomOperation(hash: op(1), room: roomID(room), sequence: 1, encoded: [1]), at: 1))
        XCTAssertFalse(
            try store.insertRoomOperation(
                StoredRoomOperation(hash: op(1), room: roomID(room), sequence: 1, encoded: [9]), at: 2))
        XCTAssertEqual(try store.roomOperations(room: roomID(room)).map(\.encoded), [[1], [2]])
        XCTAssertEqual(try store.roomOperationCount(room: roomID(room)), 2)
        XCTAssertEqual(try store.roomsWithOperationsCount(), 1)
    }

    /// The pump's shortcut: "known empty" only after a check found both outboxes empty,
    /// and lost again by anything queued, whether a room message or an operation.
    func testRoomOutboxesAreKnownEmptyOnlyUntilSomethingIsQueued() throws {
        let store = try open()
        XCTAssertTrue(store.roomOutboxesMayHaveWork, "unknown at open")
        try store.checkRoomOutboxesEmpty()
        XCTAssertFalse(store.roomOutboxesMayHaveWork)

        let m = try send(store, 1, to: [bob])
        XCTAssertTrue(store.roomOutboxesMayHaveWork, "a queued room message")
        try store.checkRoomOutboxesEmpty()
        XCTAssertTrue(store.roomOutboxesMayHaveWork, "still queued for bob")
        _ = try store.markRoomDeliveries(ids: [m.id.hex], by: bob, at: 2)
        try store.checkRoomOutboxesEmpty()
        XCTAssertFalse(store.roomOutboxesMayHaveWork)

        _ = try store.insertRoomOperation(
            StoredRoomOperation(hash: op(1), room: roomID(room), sequence: 1, encoded: [1]), at: 1)
        XCTAssertFalse(store.roomOutboxesMayHaveWork, "storing an operation queues nothing by itself")
        try store.queueRoomOperations([op(1)], for: [key(carol)], at: 3)
        XCTAssertTrue(store.roomOutboxesMayHaveWork, "a queued operation")
        try store.checkRoomOutboxesEmpty()
        XCTAssertTrue(store.roomOutboxesMayHaveWork)
        XCTAssertEqual(try store.acknowledgeRoomOperations(ackIDs: [ack(1)], by: key(carol)), 1)
        try store.checkRoomOutboxesEmpty()
        XCTAssertFalse(store.roomOutboxesMayHaveWork)

        // A message to a room of one queues nothing.
        _ = try send(store, 2, to: [])
        XCTAssertFalse(store.roomOutboxesMayHaveWork)
    }

    func testOperationOutboxIsPerMemberAndClearedByAckID() throws {
        let store = try open()
        for n in [1, 2] {
            _ = try store.insertRoomOperation(
                StoredRoomOperation(hash: op(n), room: roomID(room), sequence: Int64(n), encoded: [UInt8(n)]), at: 1)
        }
        try store.queueRoomOperations([op(2), op(1)], for: [key(bob), key(carol)], at: 5)
        try store.queueRoomOperations([op(1)], for: [key(bob)], at: 6)  // idempotent
        XCTAssertEqual(try store.pendingRoomOperations(to: key(bob), limit: 10).map(\.hash), [op(1), op(2)])
        XCTAssertEqual(try store.acknowledgeRoomOperations(ackIDs: [ack(1)], by: key(bob)), 1)
        XCTAssertEqual(try store.pendingRoomOperations(to: key(bob), limit: 10).map(\.hash), [op(2)])
        XCTAssertEqual(try store.pendingRoomOperations(to: key(carol), limit: 10).map(\.hash), [op(1), op(2)])
        // The combined ack path clears operations and room messages in one go.
        let m = try send(store, 1, to: [carol])
        let done = try store.acknowledgeRoomTraffic(ids: [String(opHash(2).prefix(32)), m.id.hex], by: carol, at: 9)
        XCTAssertEqual(done.delivered.map(\.id.hex), [m.id.hex])
        XCTAssertEqual(try store.pendingRoomOperations(to: key(carol), limit: 10).map(\.hash), [op(1)])
    }

    func testRoomStateIsReplacedWhole() throws {
        let store = try open()
        var record = RoomRecord(
            id: roomID(room), root: op(1), name: "lab", creator: key(me), createdAt: 1, version: 1,
            members: [key(me), key(bob), key(carol)], status: .joined,
            roles: [key(me): .owner, key(bob): .admin, key(carol): .member], joined: [key(me), key(bob)],
            onlyAdminsAdd: true, updatedAt: 2)
        try store.saveRoom(record)
        XCTAssertEqual(try store.room(id: roomID(room)), record)
        record.members = [key(me), key(bob)]
        record.roles = [key(me): .owner, key(bob): .member]
        record.version = 2
        try store.saveRoom(record)
        XCTAssertEqual(try store.room(id: roomID(room))?.members, [key(me), key(bob)])
        XCTAssertEqual(try store.rooms().map(\.version), [2])
        // Survives a reopen.
        try store.close()
        XCTAssertEqual(try open().room(id: roomID(room)), record)
    }

    func testInvitationsAreCountedPerInviterAndForgottenWhole() throws {
        let store = try open()
        let invited = RoomRecord(
            id: roomID(room), root: op(1), name: "fake", creator: key(bob), createdAt: 1, version: 1,
            members: [key(me), key(bob)], status: .invited, roles: [key(me): .member, key(bob): .owner],
            joined: [key(bob)],
            inviter: key(bob), updatedAt: 2)
        try store.saveRoom(invited)
        XCTAssertTrue(
            try store.insertRoomOperation(
                StoredRoomOperation(hash: op(1), room: roomID(room), sequence: 1, encoded: [1]), at: 1))
        XCTAssertEqual(try store.invitationCount(from: key(bob)), 1)
        XCTAssertEqual(try store.invitationCount(from: key(carol)), 0)
        XCTAssertEqual(try store.room(id: roomID(room))?.inviter, key(bob))
        try store.forgetInvitation(room: roomID(room))
        XCTAssertNil(try store.room(id: roomID(room)))
        XCTAssertEqual(try store.roomOperations(room: roomID(room)), [])
        XCTAssertEqual(try store.invitationCount(from: key(bob)), 0)
    }

    func testStaleInvitationsAreForgotten() throws {
        let store = try open()
        let fresh = hex(0xab, 16)
        for (id, at) in [(room, Int64(10)), (fresh, Int64(1_000))] {
            try store.saveRoom(
                RoomRecord(
                    id: roomID(id), root: op(1), name: "x", creator: key(bob), createdAt: 1, version: 1,
                    members: [key(me), key(bob)], status: .invited, inviter: key(bob), updatedAt: at))
        }
        XCTAssertEqual(try store.forgetInvitations(before: 500), [roomID(room)])
        XCTAssertNil(try store.room(id: roomID(room)))
        XCTAssertNotNil(try store.room(id: roomID(fresh)))
    }

    private func hex(_ byte: UInt8, _ count: Int) -> String { Self.hex(byte, count) }

    func testForgettingNeverTouchesAJoinedRoom() throws {
        let store = try open()
        let joined = RoomRecord(
            id: roomID(room), root: op(1), name: "lab", creator: key(me), createdAt: 1, version: 1,
            members: [key(me)], status: .joined, roles: [key(me): .owner], joined: [key(me)], updatedAt: 2)
        try store.saveRoom(joined)
        XCTAssertTrue(
            try store.insertRoomOperation(
                StoredRoomOperation(hash: op(1), room: roomID(room), sequence: 1, encoded: [1]), at: 1))
        try store.forgetInvitation(room: roomID(room))
        XCTAssertEqual(try store.room(id: roomID(room)), joined)
        XCTAssertEqual(try store.roomOperations(room: roomID(room)).count, 1)
    }

    /// rooms-v2: a version-1 room keeps its messages, becomes `retired`, and its
    /// operations (unreadable as version 2) and their outbox are gone.
    func testVersion1RoomsAreRetiredWithTheirHistoryKept() throws {
        let queue = try DatabaseQueue(path: directory + "/parley.sqlite")
        try Schema.migrator.migrate(queue, upTo: "trust-v2")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO room (id, root, name, creator, created_at, version, is_member, updated_at)
                    VALUES (?, ?, 'lab', ?, 1, 3, 1, 2)
                    """, arguments: [room, opHash(1), me])
            try db.execute(
                sql: "INSERT INTO room_member (room, identity) VALUES (?, ?), (?, ?)",
                arguments: [room, me, room, bob])
            try db.execute(
                sql: """
                    INSERT INTO room_operation (hash, room, sequence, encoded, received_at) VALUES (?, ?, 1, x'01', 1)
                    """, arguments: [opHash(1), room])
            try db.execute(
                sql: """
                    INSERT INTO room_operation_outbox (operation, member, ack_id, queued_at) VALUES (?, ?, ?, 1)
                    """, arguments: [opHash(1), bob, String(opHash(1).prefix(32))])
        }
        try queue.close()
        let store = try open()
        let retired = try XCTUnwrap(try store.room(id: roomID(room)))
        XCTAssertEqual(retired.status, .retired)
        XCTAssertFalse(retired.isMember)
        XCTAssertEqual(retired.members, [key(me), key(bob)], "the member list stays as it was, for the history")
        XCTAssertEqual(try store.roomOperations(room: roomID(room)), [])
        XCTAssertEqual(try store.pendingRoomOperations(to: key(bob), limit: 10), [])
    }

    func testASignedFormOfAnotherMessageIsRefused() throws {
        // Room ids, members and operation hashes are typed (`RoomID`, `IdentityPublicKey`,
        // `RoomOperationHash`): malformed hex cannot reach those functions (StoredKeysTests:
        // a damaged stored one is corrupt). What the types cannot say is still checked.
        let store = try open()
        let other = Store.SignedRoomMessageRow(room: room, author: me, sequence: 1, id: messageID(2), encoded: [1])
        XCTAssertThrowsError(
            try store.enqueueRoomMessage(
                id: messageID(1), room: room, body: "x", createdAt: 1, sender: me, members: [bob], signed: other))
        XCTAssertEqual(try store.counts().queued, 0, "nothing was written")
    }
}
