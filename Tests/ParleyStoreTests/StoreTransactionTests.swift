import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32 part 7: what every write transaction costs on its own (one message in flight is
/// one transaction per side): the page size new files are made with, and `BEGIN`/`COMMIT`
/// held by the store and stepped through SQLite's C API.
final class StoreTransactionTests: StoreDirectoryTestCase {
    private let me = try! IdentityPublicKey(bytes: [UInt8](repeating: 0xa1, count: 32))
    private let bob = try! IdentityPublicKey(bytes: [UInt8](repeating: 0xb2, count: 32))

    private func message(_ id: MessageID = .random(), _ body: String = "hi") -> NewOutgoingMessage {
        NewOutgoingMessage(id: id, recipient: bob, body: body, createdAt: 1)
    }

    private func pageSize(_ store: Store) throws -> Int {
        try store.read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 0 }
    }

    func testANewStoreIsMadeWithSmallPages() throws {
        let store = try Store(directory: directory)
        XCTAssertEqual(try pageSize(store), Store.newFilePageSize)
        XCTAssertEqual(Store.newFilePageSize, 2048)
        _ = try store.enqueue([message()], sender: me)
        try store.close()
        XCTAssertEqual(try pageSize(try Store(directory: directory)), Store.newFilePageSize)
    }

    /// An existing store (made before part 7, at SQLite's default 4 KiB) keeps its pages:
    /// changing them would rewrite the whole file.
    func testAStoreMadeWithLargerPagesKeepsThem() throws {
        let path = directory + "/" + Store.fileName
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA page_size = 4096")
            try db.execute(sql: "CREATE TABLE scratch (x); DROP TABLE scratch")
        }
        try queue.close()
        let store = try Store(directory: directory)
        XCTAssertEqual(try pageSize(store), 4096)
        let id = MessageID.random()
        _ = try store.enqueue([message(id, "kept")], sender: me)
        try store.close()
        let reopened = try Store(directory: directory)
        XCTAssertEqual(try pageSize(reopened), 4096)
        XCTAssertEqual(try reopened.message(id: id)?.body, "kept")
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

    /// A COMMIT that fails (here a deferred foreign key, checked only at COMMIT; a full disk
    /// or an I/O error fail there too) rolls the transaction back through the held
    /// statements: nothing of it stays, the connection is out of the transaction, and the
    /// next write commits.
    func testAFailedCommitRollsBackAndTheNextWriteCommits() throws {
        let store = try Store(directory: directory)
        XCTAssertThrowsError(
            try store.write { db in
                try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
                try db.execute(
                    sql: """
                        INSERT INTO reaction (message_row, reactor, reaction, sequence, present)
                        VALUES (999999, 'x', 'y', 1, 1)
                        """)
            })
        let left = try store.read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM reaction") ?? -1, db.isInsideTransaction)
        }
        XCTAssertEqual(left.0, 0, "the failed commit's rows are rolled back")
        XCTAssertFalse(left.1)
        let next = MessageID.random()
        _ = try store.enqueue([message(next)], sender: me)
        try store.close()
        let reopened = try Store(directory: directory)
        XCTAssertNotNil(try reopened.message(id: next))
        XCTAssertEqual(try reopened.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM reaction") }, 0)
    }
}
