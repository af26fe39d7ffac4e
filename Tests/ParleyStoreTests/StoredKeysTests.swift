import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// The peer tables keep keys as lowercase hex and the API hands out typed keys: what the
/// store reads back is parsed, and a damaged value is a `.corrupt` error, never a trap or
/// a key that no longer finds its own row.
final class StoredKeysTests: StoreDirectoryTestCase {
    private let alice = StoredKeyFixture.key(0xa1)
    private let bob = StoredKeyFixture.key(0xb0)

    private func record(_ identity: IdentityPublicKey, replacedBy: IdentityPublicKey? = nil) -> PeerRecord {
        PeerRecord(
            identity: identity, displayName: "alice", hostName: "h", card: [1], cardSequence: 1,
            noiseKey: StoredKeyFixture.noiseKey(0x55), trust: .pinned, firstSeen: 1, lastSeen: 1,
            replacedBy: replacedBy)
    }

    /// Rewrites one column of alice's row behind the store's back (a damaged or hand-edited file).
    private func damage(_ column: String, to value: String, in directory: String) throws {
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false  // replaced_by names no row: that is the damage
        let queue = try DatabaseQueue(path: directory + "/" + Store.fileName, configuration: configuration)
        try queue.write { db in
            try db.execute(sql: "UPDATE peer SET \(column) = ? WHERE identity = ?", arguments: [value, alice.hex])
        }
    }

    func testTypedKeysRoundTripThroughTheirStoredHex() throws {
        var store: Store? = try Store(directory: directory)
        try store!.upsertPeer(record(bob))
        try store!.upsertPeer(record(alice, replacedBy: bob))
        try store!.rememberAddress("10.0.0.1:7744", of: alice, at: 5)
        try store!.setRoomSyncPeer(alice, syncing: true)
        store = nil
        store = try Store(directory: directory)
        XCTAssertEqual(try store!.peer(identity: alice), record(alice, replacedBy: bob))
        XCTAssertEqual(try store!.rememberedAddresses(), [:], "a replaced key is not redialled")
        XCTAssertEqual(try store!.roomSyncPeers(), [alice])
    }

    func testARoomRoundTripsTypedAndADamagedMemberIsCorrupt() throws {
        let store = try Store(directory: directory)
        let room = RoomRecord(
            id: RoomID(exactly: [UInt8](repeating: 3, count: RoomID.length)),
            root: RoomOperationHash(exactly: [UInt8](repeating: 4, count: RoomOperationHash.length)), name: "lab",
            creator: alice, createdAt: 1, version: 1, members: [alice, bob], status: .invited,
            roles: [alice: .owner, bob: .member], joined: [alice], inviter: alice, updatedAt: 2)
        try store.saveRoom(room)
        XCTAssertEqual(try store.room(id: room.id), room)
        XCTAssertEqual(try store.invitationCount(from: alice), 1)
        try store.close()
        let queue = try DatabaseQueue(path: directory + "/" + Store.fileName)
        try queue.write { db in
            try db.execute(
                sql: "UPDATE room_member SET identity = upper(identity) WHERE identity = ?", arguments: [bob.hex])
        }
        try queue.close()
        let reopened = try Store(directory: directory)
        XCTAssertThrowsError(try reopened.rooms()) { error in
            guard case .corrupt(_, let reason) = error as? StoreError else { return XCTFail("\(error)") }
            XCTAssertTrue(reason.contains("room_member.identity"), reason)
        }
    }

    func testATransferIsFoundByItsTypedKeysAndADamagedIDIsCorrupt() throws {
        let store = try Store(directory: directory)
        let transfer = TransferID(exactly: [UInt8](repeating: 7, count: TransferID.length))
        let room = RoomID(exactly: [UInt8](repeating: 9, count: RoomID.length))
        let offered = FileTransferRecord(
            transfer: transfer, peer: alice, direction: .incoming, room: room, name: "a.txt", size: 3,
            mediaType: "text/plain", caption: "", thumbnail: [], chunkSize: 1, contentHash: [1], listHash: [2],
            chunkHashes: nil, state: .offered, createdAt: 1, updatedAt: 1)
        let stored = try store.insertTransfer(offered).record
        XCTAssertEqual(try store.transfer(peer: alice, transfer: transfer, direction: .incoming), stored)
        XCTAssertNil(try store.transfer(peer: bob, transfer: transfer, direction: .incoming), "keyed on the sender too")
        XCTAssertEqual(try store.transfers(idPrefix: String(transfer.hex.prefix(6)), limit: 5), [stored])
        XCTAssertEqual(try store.unfinishedTransfers(with: alice).map(\.room), [room])
        try store.close()
        let queue = try DatabaseQueue(path: directory + "/" + Store.fileName)
        try queue.write { db in try db.execute(sql: "UPDATE file_transfer SET room = 'not hex'") }
        try queue.close()
        let reopened = try Store(directory: directory)
        // A list of many rows leaves the damaged one out and names it (StoreDamagedRowTests):
        // never a trap, never a transfer with a room of another form.
        let heard = HeardRows()
        reopened.unreadableRows.report { heard.add($0) }
        XCTAssertEqual(try reopened.recentTransfers(limit: 5), [])
        XCTAssertEqual(heard.rows.map(\.table), ["file_transfer"])
        XCTAssertTrue(heard.rows.first?.problem.contains("file_transfer.room") == true, "\(heard.rows)")
    }

    func testADamagedStoredKeyIsCorruptNotATrap() throws {
        for (i, (column, value)) in [
            ("noise_key", "zz"), ("noise_key", String(repeating: "AB", count: 32)),
            ("replaced_by", String(repeating: "0", count: 63))
        ].enumerated() {
            let directory = directory + "/\(i)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            var store: Store? = try Store(directory: directory)
            try store!.upsertPeer(record(alice))
            store = nil
            try damage(column, to: value, in: directory)
            store = try Store(directory: directory)
            XCTAssertThrowsError(try store!.peer(identity: alice), "\(column) = \(value)") { error in
                guard case .corrupt(_, let reason) = error as? StoreError else {
                    return XCTFail("\(column) = \(value): \(error)")
                }
                XCTAssertTrue(reason.contains("peer.\(column)"), reason)
            }
            XCTAssertThrowsError(try store!.peers())
        }
    }

    /// The action, reaction and signed room-message tables keep hex too (round 13 typed
    /// their API): a damaged value read back is `.corrupt`, naming the column, never a trap.
    func testDamagedActionReactionAndSignedRoomRowsAreCorruptNotATrap() throws {
        var store: Store? = try Store(directory: directory)
        let received = try store!.storeIncoming(
            [
                IncomingMessage(
                    id: MessageID(exactly: [UInt8](repeating: 1, count: 16)), sender: bob, recipient: alice,
                    sequence: 1, createdAt: 1, body: "hi")
            ], at: 2)[0].message
        _ = try store!.performLocalAction(
            NewLocalAction(
                id: MessageID(exactly: [UInt8](repeating: 2, count: 16)), peer: .peer(bob), target: received,
                kind: .react, body: "👍", createdAt: 3),
            me: alice, at: 3)
        let room = RoomID(exactly: [UInt8](repeating: 7, count: 16))
        _ = try store!.insertSignedRoomMessage(
            room: room, author: alice, sequence: 1, id: MessageID(exactly: [UInt8](repeating: 3, count: 16)),
            encoded: [1], at: 4)
        XCTAssertEqual(try store!.pendingActions(to: bob, limit: 10).map(\.author), [alice])
        XCTAssertEqual(try store!.reactions(onRows: [received.rowID])[received.rowID]?.map(\.reactor), [alice])
        XCTAssertEqual(try store!.signedRoomMessageSequences().map(\.author), [alice])
        store = nil
        let queue = try DatabaseQueue(path: directory + "/" + Store.fileName)
        try queue.write { db in
            try db.execute(sql: "UPDATE message_action SET author = upper(author)")
            try db.execute(sql: "UPDATE reaction SET reactor = 'zz'")
            try db.execute(sql: "UPDATE room_signed_message SET author = substr(author, 2)")
        }
        try queue.close()
        store = try Store(directory: directory)
        func assertCorrupt<T>(_ column: String, _ body: () throws -> T) {
            XCTAssertThrowsError(try body(), column) { error in
                guard case .corrupt(_, let reason) = error as? StoreError else { return XCTFail("\(column): \(error)") }
                XCTAssertTrue(reason.contains(column), reason)
            }
        }
        assertCorrupt("message_action.author") { try store!.pendingActions(to: bob, limit: 10) }
        assertCorrupt("reaction.reactor") { try store!.reactions(onRows: [received.rowID]) }
        // Room sync's list of held messages leaves the damaged row out and names it: one
        // damaged row must not empty every room's sync (StoreDamagedRowTests).
        let heard = HeardRows()
        store!.unreadableRows.report { heard.add($0) }
        XCTAssertEqual(try store!.signedRoomMessageSequences().count, 0)
        XCTAssertTrue(heard.rows.first?.problem.contains("room_signed_message.author") == true, "\(heard.rows)")
    }
}

/// The damaged rows a store's reads reported (the handler may be called from any thread).
final class HeardRows: @unchecked Sendable {
    private let lock = NSLock()
    private var heard: [UnreadableRow] = []
    func add(_ row: UnreadableRow) { lock.withLock { heard.append(row) } }
    var rows: [UnreadableRow] { lock.withLock { heard } }
}
