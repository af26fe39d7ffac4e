import Foundation
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32 part 7: what every write transaction costs on its own (one message in flight is
/// one transaction per side): `BEGIN`/`COMMIT` held by the store and stepped through
/// SQLite's C API.
final class StoreTransactionTests: StoreDirectoryTestCase {
    private let me = try! IdentityPublicKey(bytes: [UInt8](repeating: 0xa1, count: 32))
    private let bob = try! IdentityPublicKey(bytes: [UInt8](repeating: 0xb2, count: 32))

    private func message(_ id: MessageID = .random(), _ body: String = "hi") -> NewOutgoingMessage {
        NewOutgoingMessage(id: id, recipient: bob, body: body, createdAt: 1)
    }

    /// A transaction that fails rolls back, and the held `BEGIN`/`COMMIT` serve the next
    /// one; closing lets go of them, so the file can be opened again at once (a statement
    /// left prepared would keep the connection, and its exclusive lock, open).
    func testAFailedWriteRollsBackAndTheNextCommitsAndCloseLetsGo() throws {
        let store = try Store(directory: directory)
        let taken = MessageID.random()
        _ = try store.enqueue([message(taken)], sender: me)
        let before = store.committedWriteTransactions
        let lost = MessageID.random()
        XCTAssertThrowsError(try store.enqueue([message(lost), message(taken)], sender: me)) { error in
            guard case StoreError.conflict = error else { return XCTFail("\(error)") }
        }
        XCTAssertNil(try store.message(id: lost), "the failed batch is rolled back whole")
        let next = MessageID.random()
        _ = try store.enqueue([message(next)], sender: me)
        XCTAssertEqual(store.committedWriteTransactions, before + 1)
        try store.close()
        let reopened = try Store(directory: directory)
        XCTAssertNotNil(try reopened.message(id: next))
        XCTAssertNotNil(try reopened.message(id: taken))
        XCTAssertNil(try reopened.message(id: lost))
    }
}
