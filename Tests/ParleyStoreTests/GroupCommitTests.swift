import Foundation
import ParleyCore
import XCTest

@testable import ParleyStore

/// Issue 32, group commit: the message path's commits return before their sync, one sync
/// covers every commit made before it began, and what waits for durability runs only after.
final class GroupCommitTests: StoreDirectoryTestCase {
    /// Closures the syncer hands to "the store's thread": the test is that thread.
    final class Hops: @unchecked Sendable {
        private let lock = NSLock()
        private var work: [@Sendable () -> Void] = []
        func add(_ w: @escaping @Sendable () -> Void) {
            lock.lock()
            work.append(w)
            lock.unlock()
        }
        /// Runs what has arrived, waiting (bounded) for at least one.
        func runArrived(within seconds: Double = 10) {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                lock.lock()
                let arrived = work
                work.removeAll()
                lock.unlock()
                if !arrived.isEmpty {
                    arrived.forEach { $0() }
                    return
                }
                usleep(1_000)
            }
            XCTFail("nothing arrived from the syncer")
        }
    }

    /// A sync that waits until the test lets it through, and counts itself.
    final class HeldSync: @unchecked Sendable {
        let gate = DispatchSemaphore(value: 0)
        private let lock = NSLock()
        private var count = 0
        var syncs: Int {
            lock.lock()
            defer { lock.unlock() }
            return count
        }
        func sync() {
            gate.wait()
            lock.lock()
            count += 1
            lock.unlock()
        }
    }

    private let me = String(repeating: "a1", count: 32)
    private let bob = String(repeating: "b2", count: 32)

    private func queue(_ store: Store, _ body: String) throws -> StoredMessage {
        try store.enqueue(
            [NewOutgoingMessage(id: MessageID.random().hex, recipient: bob, body: body, createdAt: 1)], sender: me)[0]
    }

    func testTheLedgerReleasesWaitersOnlyThroughTheSyncedTicket() {
        var ledger = GroupCommitLedger<String>()
        XCTAssertNil(ledger.unsyncedCommit)
        XCTAssertEqual(ledger.wait(through: 0, "already"), "already")
        let one = ledger.committedDeferred()
        let two = ledger.committedDeferred()
        XCTAssertEqual(ledger.unsyncedCommit, two)
        XCTAssertNil(ledger.wait(through: two, "two"))
        XCTAssertNil(ledger.wait(through: one, "one"))
        ledger.synced(through: one)
        XCTAssertEqual(ledger.takeReady(), ["one"])
        XCTAssertEqual(ledger.unsyncedCommit, two)
        // A later commit synced by SQLite itself covers every earlier one.
        ledger.committedDurably()
        XCTAssertEqual(ledger.takeReady(), ["two"])
        XCTAssertNil(ledger.unsyncedCommit)
        // A sync never reaches past what was committed.
        ledger.synced(through: 99)
        let three = ledger.committedDeferred()
        XCTAssertFalse(ledger.isDurable(three))
    }

    /// Issue 32 part 12: a `last` waiter runs after every other waiter the same sync
    /// releases, even those registered after it; waiters of a later sync wait for it.
    func testLastWaitersRunAfterTheOthersOfTheSameSync() {
        var ledger = GroupCommitLedger<String>()
        let one = ledger.committedDeferred()
        XCTAssertNil(ledger.wait(through: one, last: true, "ack"))
        XCTAssertNil(ledger.wait(through: one, "line"))
        XCTAssertNil(ledger.wait(through: one, "line 2"))
        let two = ledger.committedDeferred()
        XCTAssertNil(ledger.wait(through: two, "later"))
        ledger.synced(through: one)
        XCTAssertEqual(ledger.takeReady(), ["line", "line 2", "ack"])
        XCTAssertEqual(ledger.waiterCount, 1)
        ledger.synced(through: two)
        XCTAssertEqual(ledger.takeReady(), ["later"])
    }

    /// Issue 32 part 12: inside `holdingSyncRequests` a deferred commit does not ask the
    /// syncer; the outermost scope's end asks once, for the newest commit.
    func testAHeldSyncRequestIsAskedForAtTheEndOfTheOutermostHold() throws {
        let store = try Store(directory: directory)
        let hops = Hops()
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { hops.add($0) }, failed: { _ in XCTFail("failed") })
        try store.holdingSyncRequests { () throws in
            _ = try queue(store, "one")
            try store.holdingSyncRequests { () throws in _ = try queue(store, "two") }
            XCTAssertEqual(store.syncRequestedThrough, 0, "an inner hold's end does not ask")
        }
        let ticket = try XCTUnwrap(store.unsyncedCommit)
        XCTAssertEqual(store.syncRequestedThrough, ticket)
        // Outside a hold the commit asks at once.
        _ = try queue(store, "three")
        XCTAssertEqual(store.syncRequestedThrough, ticket + 1)
        var ran = false
        store.whenDurable { ran = true }
        for _ in 0..<3 { held.gate.signal() }
        for _ in 0..<5 where !ran { hops.runArrived() }
        XCTAssertTrue(ran)
        try store.close()
    }

    /// A hold whose body throws still ends (and asks for the sync its commits need): a
    /// leaked hold would keep every later commit from asking, and nothing would be
    /// answered or acknowledged again.
    func testAHoldWhoseBodyThrowsStillAsksForItsSync() throws {
        struct Thrown: Error {}
        let store = try Store(directory: directory)
        let hops = Hops()
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { hops.add($0) }, failed: { _ in XCTFail("failed") })
        XCTAssertThrowsError(
            try store.holdingSyncRequests { () throws in
                _ = try queue(store, "one")
                throw Thrown()
            })
        let ticket = try XCTUnwrap(store.unsyncedCommit)
        XCTAssertEqual(store.syncRequestedThrough, ticket, "the thrown hold's end asked")
        _ = try queue(store, "two")
        XCTAssertEqual(store.syncRequestedThrough, ticket + 1, "no hold is left: the next commit asks at once")
        for _ in 0..<3 { held.gate.signal() }
        try store.close()
    }

    func testAQueuedMessageIsDurableOnlyAfterTheSyncThatFollowsIt() throws {
        let store = try Store(directory: directory)
        let hops = Hops()
        let held = HeldSync()
        try store.startGroupCommit(sync: { held.sync() }, hop: { hops.add($0) }, failed: { _ in XCTFail("failed") })
        _ = try queue(store, "one")
        _ = try queue(store, "two")
        let ticket = try XCTUnwrap(store.unsyncedCommit, "committed, not yet synced")
        var ran = false
        store.whenDurable { ran = true }
        XCTAssertFalse(ran)
        XCTAssertEqual(store.durableWaiterCount, 1)
        // Stored meanwhile: readable at once, only its sync is pending.
        XCTAssertEqual(try store.counts().queued, 2)
        // One sync for both commits (if the second was made before the syncer woke), or two.
        held.gate.signal()
        held.gate.signal()
        for _ in 0..<5 where !ran { hops.runArrived() }
        XCTAssertTrue(store.isDurable(ticket))
        XCTAssertTrue(ran)
        XCTAssertNil(store.unsyncedCommit)
        XCTAssertLessThanOrEqual(held.syncs, 2)
        // Durable now: a new waiter runs at once.
        var now = false
        store.whenDurable { now = true }
        XCTAssertTrue(now)
        for _ in 0..<4 { held.gate.signal() }
        try store.close()
    }

    func testASyncedWriteReleasesTheDeferredCommitsBeforeIt() throws {
        let store = try Store(directory: directory)
        let hops = Hops()
        let held = HeldSync()  // never let through: only SQLite's own sync makes it durable
        try store.startGroupCommit(sync: { held.sync() }, hop: { hops.add($0) }, failed: { _ in XCTFail("failed") })
        _ = try queue(store, "deferred")
        var ran = false
        store.whenDurable { ran = true }
        try store.setSetting("x", "y")  // an ordinary write: synchronous=FULL, syncs the WAL
        XCTAssertNil(store.unsyncedCommit)
        hops.runArrived()
        XCTAssertTrue(ran)
        XCTAssertEqual(held.syncs, 0)
        held.gate.signal()
        try store.close()
    }

    func testAFailedSyncIsReportedAndReleasesNothing() throws {
        let store = try Store(directory: directory)
        let hops = Hops()
        final class Reported: @unchecked Sendable { var error: StoreError? }
        let reported = Reported()  // written and read on the test's thread (through `hops`)
        try store.startGroupCommit(
            sync: { throw StoreError.io(path: "wal", reason: "EIO") }, hop: { hops.add($0) },
            failed: { e in reported.error = e })
        _ = try queue(store, "lost?")
        var ran = false
        store.whenDurable { ran = true }
        hops.runArrived()
        XCTAssertNotNil(reported.error)
        XCTAssertFalse(ran)
        XCTAssertNotNil(store.unsyncedCommit)
        try store.close()
    }

    /// The real sync: a deferred commit's rows are in the WAL, and the store reopens with them.
    func testTheRealSyncerSyncsTheWALAndTheStoreReopensWithEverything() throws {
        var store: Store? = try Store(directory: directory)
        let hops = Hops()
        try store!.startGroupCommit(hop: { hops.add($0) }, failed: { _ in XCTFail("failed") })
        var ids: [String] = []
        for i in 0..<20 { ids.append(try queue(store!, "m\(i)").id.hex) }
        var ran = false
        store!.whenDurable { ran = true }
        for _ in 0..<20 where !ran { hops.runArrived() }
        XCTAssertNil(store!.unsyncedCommit)
        try store!.close()
        store = nil
        let reopened = try Store(directory: directory)
        XCTAssertEqual(try reopened.counts().queued, 20)
        for id in ids { XCTAssertNotNil(try reopened.message(id: id, sender: me)) }
    }

    /// Without group commit nothing waits: `Durability.normal`, or never started.
    func testWithoutGroupCommitEverythingIsDurableAtOnce() throws {
        let store = try Store(directory: directory, durability: .normal)
        try store.startGroupCommit(hop: { _ in XCTFail("no syncer") }, failed: { _ in XCTFail("failed") })
        _ = try queue(store, "x")
        XCTAssertNil(store.unsyncedCommit)
        var ran = false
        store.whenDurable { ran = true }
        XCTAssertTrue(ran)
    }
}
