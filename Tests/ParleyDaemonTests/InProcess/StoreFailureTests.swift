import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// A store error is never read as a default that admits: when the receiver cannot count
/// what a sender keeps, its chats are not taken (they stay queued at the sender, which
/// sends them again at the next session), never taken "unchecked" past the quota.
final class StoreFailureTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var alice: InProcessNode!
    var bob: InProcessNode!
    let bobLog = CollectedLogLines()

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock, log: bobLog.logger())
    }

    override func tearDownWithError() throws {
        alice.node.stop()
        bob.node.stop()
        _ = try? loop.syncShutdownGracefully()
        for n in [alice, bob] { try? FileManager.default.removeItem(atPath: n!.directory) }
        alice = nil
        bob = nil
    }

    /// A room alice creates with bob, and bob joins (alice's record of it).
    private func roomBobJoined(_ name: String, over link: InProcessLink) throws -> RoomRecord {
        let room = try alice.node.createRoom(name: name, members: [try alice.node.resolvePeer("bob")])
        try link.exchange()
        _ = try bob.node.acceptInvitation(try XCTUnwrap(try bob.node.store.room(id: room.id)))
        try link.exchange()
        return try XCTUnwrap(try alice.node.store.room(id: room.id))
    }

    func testAChatIsNotTakenWhileTheReceiverCannotCountWhatItsSenderKeeps() throws {
        var link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let counts = bob.node.messageDriver.quota.store
        bob.node.messageDriver.quota.store = UncountableQuotaStore(counts)
        let sent = try alice.node.send(to: try alice.node.resolvePeer("bob"), body: "lunch at noon?")
        try link.exchange()
        XCTAssertNil(
            try bob.node.store.message(id: sent.id, sender: alice.identity),
            "not taken on a count the store could not make")
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .queued, "still queued at the sender")
        XCTAssertTrue(
            bobLog.lines.contains { $0.contains("could not count what is stored from a peer") }, "\(bobLog.lines)")
        XCTAssertFalse(bob.node.sessionDriver.table.isOnline(alice.identity), "the session was closed")

        // The store counts again: the next session delivers it, nothing lost.
        bob.node.messageDriver.quota.store = counts
        link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        XCTAssertEqual(try bob.node.store.message(id: sent.id, sender: alice.identity)?.body, "lunch at noon?")
        link.writeDeliveryMarks()  // no transaction to ride on: the marks' timer
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
    }

    /// The same for room chats (counted against their author's quota like direct ones).
    func testARoomChatIsNotTakenWhileTheReceiverCannotCountWhatItsAuthorKeeps() throws {
        var link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let room = try roomBobJoined("lunch", over: link)
        let counts = bob.node.messageDriver.quota.store
        bob.node.messageDriver.quota.store = UncountableQuotaStore(counts)
        let sent = try alice.node.sendToRoom(try XCTUnwrap(try alice.node.store.room(id: room.id)), body: "noon?")
        try link.exchange()
        XCTAssertNil(
            try bob.node.store.message(id: sent.id, sender: alice.identity),
            "not taken on a count the store could not make")
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .queued, "still queued at the sender")
        XCTAssertTrue(
            bobLog.lines.contains { $0.contains("could not count what is stored from a peer") }, "\(bobLog.lines)")

        bob.node.messageDriver.quota.store = counts
        link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        XCTAssertEqual(try bob.node.store.message(id: sent.id, sender: alice.identity)?.body, "noon?")
        XCTAssertEqual(try alice.node.store.message(id: sent.id)?.state, .delivered)
    }

    /// One read carries chats for two rooms; the first room's commits, the second's fails.
    /// What was stored is still counted: the receive quota's cached counts (which judge
    /// later chats and file offers) never fall behind what the store holds.
    func testRoomChatsStoredBeforeAFailureInTheSameReadAreCounted() throws {
        var link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        var rooms: [RoomRecord] = []
        for name in ["lunch", "standup"] {
            rooms.append(try roomBobJoined(name, over: link))
        }
        // The quota's counts are cached from a first chat on.
        _ = try alice.node.sendToRoom(rooms[0], body: "first")
        try link.exchange()
        let before = try bob.node.messageDriver.quota.usage(of: alice.identity).peer
        XCTAssertEqual(before.messages, try bob.node.store.incomingUsage(from: alice.identity).messages)

        // Bob's store takes one more room message from here on, then fails (a full disk).
        let stored = try bob.node.store.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM message WHERE room IS NOT NULL") ?? 0
        }
        try bob.node.store.write { db in
            try db.execute(
                sql: """
                    CREATE TEMP TRIGGER second_room_message_fails BEFORE INSERT ON message
                    WHEN NEW.room IS NOT NULL
                        AND (SELECT COUNT(*) FROM message WHERE room IS NOT NULL) >= \(stored + 1)
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
        // Unsigned room chats, as a peer without `roomSync` sends them, both in one read.
        let conn = try XCTUnwrap(alice.node.activeConnection(for: bob.identity))
        for (k, room) in rooms.enumerated() {
            conn.send(
                .roomChat(
                    RoomChatRecord(
                        id: MessageID.random(), roomID: room.id, sequence: UInt64(1_000 + k), createdAt: 1,
                        body: k == 0 ? "noon?" : "at ten")))
        }
        try link.exchangeCoalescingForward()
        XCTAssertTrue(
            bobLog.lines.contains { $0.contains("could not store room traffic") }, "\(bobLog.lines)")
        let counted = try bob.node.messageDriver.quota.usage(of: alice.identity).peer
        let inStore = try bob.node.store.incomingUsage(from: alice.identity)
        XCTAssertEqual(inStore.messages, before.messages + 1, "one of the two was stored")
        XCTAssertEqual(counted.messages, inStore.messages, "the cached count is the store's")
        XCTAssertEqual(counted.bytes, inStore.bytes)
    }
}

/// The node's real store behind the `ReceiveQuotaStore` seam, except that every count
/// fails as a damaged or unreadable file makes it fail.
final class UncountableQuotaStore: ReceiveQuotaStore {
    let inner: any ReceiveQuotaStore
    init(_ inner: any ReceiveQuotaStore) { self.inner = inner }

    private var failure: StoreError { .io(path: "parley.sqlite", reason: "injected: the count cannot be read") }

    func incomingUsage(from sender: IdentityPublicKey) throws(StoreError) -> (messages: Int, bytes: Int) {
        throw failure
    }
    func incomingUsageTotal() throws(StoreError) -> (messages: Int, bytes: Int) { throw failure }
    func incomingUsageFromStrangers() throws(StoreError) -> (messages: Int, bytes: Int) { throw failure }
    func hasWritten(to peer: IdentityPublicKey) throws(StoreError) -> Bool { try inner.hasWritten(to: peer) }
    func incomingFileBytes(from peer: IdentityPublicKey?) throws(StoreError) -> Int { throw failure }
}

/// Collects what a node logs, for tests that check an error is said, not swallowed.
final class CollectedLogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []

    var lines: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }

    func logger(level minimum: Logger.Level = .warning) -> Logger {
        let level = SharedLogLevel(minimum)
        return Logger(label: "test") { _ in
            ParleyLogHandler(
                format: .human, level: level,
                output: LogOutput(sink: { [self] line in
                    lock.lock()
                    storage.append(line)
                    lock.unlock()
                }))
        }
    }
}
