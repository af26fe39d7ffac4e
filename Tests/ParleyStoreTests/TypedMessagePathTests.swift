import Foundation
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
}
