import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// Every test runs against a real SQLite file in its own temporary directory.
final class StoreTests: StoreDirectoryTestCase {
    // MARK: - Fixtures

    private let me = identity(0x01)
    private let alice = identity(0xa1)
    private let bob = identity(0xb0)
    private let carol = identity(0xc4)

    private static func identity(_ byte: UInt8) -> String {
        String(repeating: String(format: "%02x", byte), count: 32)
    }

    private func messageID(_ n: Int) -> String { String(format: "%032x", n) }

    /// The typed key the peer API takes for a fixture's hex.
    private func key(_ hex: String) -> IdentityPublicKey { StoredKeyFixture.key(hex) }
    private func mid(_ n: Int) -> MessageID { MessageID(hex: messageID(n))! }

    private var databasePath: String { directory + "/parley.sqlite" }

    private func open(_ durability: Durability = .full) throws -> Store {
        try Store(directory: directory, durability: durability)
    }

    private func outgoing(_ n: Int, to recipient: String, body: String? = nil) -> NewOutgoingMessage {
        NewOutgoingMessage(
            id: messageID(n), recipient: recipient, body: body ?? "message \(n)", createdAt: 1_000 + Int64(n))
    }

    private func incoming(_ n: Int, from sender: String, sequence: Int64 = 1, body: String? = nil) -> IncomingMessage {
        IncomingMessage(
            id: messageID(n), sender: sender, recipient: me, sequence: sequence,
            createdAt: 2_000 + Int64(n), body: body ?? "incoming \(n)")
    }

    private func peerRecord(_ identity: String, name: String, address: String? = nil, seen: Int64 = 10) -> PeerRecord {
        PeerRecord(
            identity: key(identity), displayName: name, hostName: "\(name)-host", card: [1, 2, 3, 0, 255],
            cardSequence: 1, noiseKey: StoredKeyFixture.noiseKey(0x55), trust: .pinned, firstSeen: seen, lastSeen: seen,
            lastAddress: address)
    }

    private func assertStoreError(
        _ expression: @autoclosure () throws -> some Any, _ expected: StoreError,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        XCTAssertThrowsError(try expression(), file: file, line: line) { error in
            XCTAssertEqual(error as? StoreError, expected, file: file, line: line)
        }
    }

    // MARK: - Sequence numbers

    func testSequenceNumbersIncreaseAndAreNeverReusedAcrossReopen() throws {
        var store: Store? = try open()
        let first = try store!.enqueue([outgoing(1, to: alice), outgoing(2, to: bob)], sender: me)
        XCTAssertEqual(first.map(\.sequence), [1, 2])
        XCTAssertEqual(try store!.nextSequenceNumbers(count: 3), 3...5)
        // Dropped without close(): no clean shutdown.
        store = nil

        store = try open(.normal)
        let second = try store!.enqueue([outgoing(3, to: alice)], sender: me)
        XCTAssertEqual(second.map(\.sequence), [6])
        XCTAssertEqual(try store!.nextSequenceNumbers(count: 1), 7...7)
        XCTAssertEqual(try store!.pendingOutgoing(to: alice, limit: 10).map(\.sequence), [1, 6])
    }

    func testCommittedStateSurvivesACrashSnapshotOfTheFiles() throws {
        let store = try open()
        _ = try store.enqueue((1...5).map { outgoing($0, to: alice) }, sender: me)

        // What is on disk while the daemon is still running is what a crash leaves behind:
        // copy the database and its WAL without closing the store.
        let crashDirectory = directory + "/crashed"
        try FileManager.default.createDirectory(atPath: crashDirectory, withIntermediateDirectories: false)
        for suffix in ["", "-wal"] where FileManager.default.fileExists(atPath: databasePath + suffix) {
            try FileManager.default.copyItem(
                atPath: databasePath + suffix,
                toPath: crashDirectory + "/parley.sqlite" + suffix)
        }

        let recovered = try Store(directory: crashDirectory)
        XCTAssertEqual(try recovered.pendingOutgoing(to: alice, limit: 10).map(\.id.hex), (1...5).map(messageID))
        XCTAssertEqual(try recovered.nextSequenceNumbers(count: 1), 6...6)
        XCTAssertEqual(try recovered.counts().queued, 5)
    }

    /// Store's own transactions (cached BEGIN/COMMIT statements, not GRDB's): a body that
    /// throws leaves nothing behind, in both kinds of write, and the store goes on working.
    func testAWriteThatThrowsIsRolledBackAndTheNextOneCommits() throws {
        struct Abort: Error {}
        for durability in [Durability.full, .normal] {
            try? FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
            let store = try open(durability)
            let message = NewOutgoingMessage(id: messageID(1), recipient: bob, body: "x", createdAt: 0)
            for write in [store.write, store.relaxedWrite] as [((Database) throws -> Void) throws -> Void] {
                XCTAssertThrowsError(
                    try write { db in
                        try db.execute(sql: "CREATE TABLE scratch (x)")
                        throw Abort()
                    })
                XCTAssertFalse(try store.read { db in try db.tableExists("scratch") })
            }
            _ = try store.enqueue([message], sender: me)
            XCTAssertEqual(try store.pendingOutgoing(to: bob, limit: 10).map(\.id.hex), [messageID(1)])
            try store.close()
        }
    }

    func testSequenceCountMustBePositive() throws {
        let store = try open()
        assertStoreError(
            try store.nextSequenceNumbers(count: 0),
            .invalidArgument("sequence number count must be positive, got 0"))
        XCTAssertEqual(try store.nextSequenceNumbers(count: 1), 1...1)
    }

    // MARK: - Outbox

    func testPendingOutgoingIsOrderedBySequenceAndCountedPerRecipient() throws {
        let store = try open()
        _ = try store.enqueue([outgoing(1, to: alice), outgoing(2, to: bob), outgoing(3, to: alice)], sender: me)
        _ = try store.enqueue([outgoing(4, to: alice), outgoing(5, to: carol)], sender: me)

        let toAlice = try store.pendingOutgoing(to: alice, limit: 10)
        XCTAssertEqual(toAlice.map(\.id.hex), [1, 3, 4].map(messageID))
        XCTAssertEqual(toAlice.map(\.sequence), [1, 3, 4])
        XCTAssertTrue(toAlice.allSatisfy { $0.state == .queued && $0.direction == .outgoing && $0.sender.hex == me })
        XCTAssertEqual(try store.pendingOutgoing(to: alice, limit: 2).map(\.sequence), [1, 3])
        XCTAssertEqual(try store.pendingOutgoing(to: alice, limit: 0), [])
        XCTAssertEqual(try store.pendingRecipients(), [key(alice): 3, key(bob): 1, key(carol): 1])
        XCTAssertEqual(try store.pendingOutgoing(to: bob, limit: 10).map(\.id.hex), [messageID(2)])
    }

    func testEnqueueReturnsWhatIsStored() throws {
        let store = try open()
        let body = "nul \u{0} inside, emoji 🦜, and \"quotes\""
        let returned = try store.enqueue([outgoing(7, to: bob, body: body)], sender: me)
        XCTAssertEqual(returned.first?.body, body)
        XCTAssertEqual(try store.message(id: messageID(7)), returned.first)
        XCTAssertEqual(try store.message(id: messageID(7), sender: me), returned.first)
        XCTAssertNil(try store.message(id: messageID(7), sender: bob))
    }

    func testDuplicateOutgoingIdFailsTheWholeBatchAndConsumesNoSequence() throws {
        let store = try open()
        _ = try store.enqueue([outgoing(1, to: alice)], sender: me)
        XCTAssertThrowsError(try store.enqueue([outgoing(2, to: alice), outgoing(1, to: bob)], sender: me)) { error in
            guard case .conflict? = error as? StoreError else { return XCTFail("expected conflict, got \(error)") }
        }
        XCTAssertNil(try store.message(id: messageID(2)), "the batch must roll back as a whole")
        XCTAssertEqual(try store.nextSequenceNumbers(count: 1), 2...2)
        XCTAssertEqual(try store.counts().queued, 1)
    }

    func testMarkDeliveredIsIdempotentAndScopedToTheRecipient() throws {
        let store = try open()
        _ = try store.enqueue([outgoing(1, to: alice), outgoing(2, to: bob), outgoing(3, to: alice)], sender: me)

        // Bob acknowledging Alice's message changes nothing.
        XCTAssertEqual(try store.markDelivered(ids: [messageID(1)], by: bob, at: 50), [])

        let changed = try store.markDelivered(
            ids: [messageID(1), messageID(2), messageID(3), "not-an-id", messageID(99)], by: alice, at: 60)
        XCTAssertEqual(changed.map(\.id.hex), [messageID(1), messageID(3)])
        XCTAssertTrue(changed.allSatisfy { $0.deliveredAt == 60 && $0.recipient.hex == alice && $0.room == nil })
        XCTAssertEqual(
            changed.map(\.rowID), [messageID(1), messageID(3)].compactMap { try? store.message(id: $0)?.rowID })
        // The same id twice in one acknowledgement changes it once.
        _ = try store.enqueue([outgoing(4, to: alice)], sender: me)
        XCTAssertEqual(
            try store.markDelivered(ids: [messageID(4), messageID(4)], by: alice, at: 61).map(\.id.hex), [messageID(4)])
        XCTAssertEqual(try store.message(id: messageID(1))?.state, .delivered)
        XCTAssertEqual(try store.message(id: messageID(2))?.state, .queued)

        // Repeated ack: nothing changes, the first delivery time stays.
        XCTAssertEqual(try store.markDelivered(ids: [messageID(1)], by: alice, at: 70), [])
        XCTAssertEqual(try store.message(id: messageID(1))?.deliveredAt, 60)

        XCTAssertEqual(try store.pendingOutgoing(to: alice, limit: 10), [])
        XCTAssertEqual(try store.pendingRecipients(), [key(bob): 1])
        let counts = try store.counts()
        XCTAssertEqual([counts.queued, counts.delivered, counts.received], [1, 3, 0])
    }

    // MARK: - Receive quota (issue 15)

    func testIncomingUsageCountsMessagesAndBodyBytesPerSenderAndInTotal() throws {
        let store = try open()
        _ = try store.storeIncoming(
            [
                incoming(1, from: alice, body: "abc"), incoming(2, from: alice, body: "defgh"),
                incoming(3, from: bob, body: "z")
            ], at: 10)
        _ = try store.enqueue([outgoing(4, to: alice, body: "outgoing does not count")], sender: me)
        XCTAssertEqual(try store.incomingUsage(from: key(alice)).messages, 2)
        XCTAssertEqual(try store.incomingUsage(from: key(alice)).bytes, 8)
        XCTAssertEqual(try store.incomingUsage(from: key(carol)).messages, 0)
        XCTAssertEqual(try store.incomingUsageTotal().messages, 3)
        XCTAssertEqual(try store.incomingUsageTotal().bytes, 9)
        XCTAssertEqual(
            try store.storedIncomingIDs([mid(1), mid(3), mid(9)], from: key(alice)), [mid(1)])
    }

    func testACorrespondentIsAPeerTheUserWroteToNotOneThatOnlyWroteToUs() throws {
        let store = try open()
        _ = try store.storeIncoming([incoming(1, from: alice), incoming(2, from: bob)], at: 10)
        XCTAssertFalse(
            try store.hasWritten(to: key(alice)), "a stream of incoming messages makes nobody a correspondent")
        _ = try store.enqueue([outgoing(3, to: alice)], sender: me)
        XCTAssertTrue(try store.hasWritten(to: key(alice)), "queued already counts: the user chose to write")
        XCTAssertFalse(try store.hasWritten(to: key(bob)))
        _ = try store.deleteConversation(with: key(alice))
        XCTAssertFalse(try store.hasWritten(to: key(alice)), "deleting the conversation forgets it")
    }

    func testDeletingAConversationRemovesBothDirectionsAndKeepsTheCounts() throws {
        let store = try open()
        _ = try store.storeIncoming([incoming(1, from: alice), incoming(2, from: bob)], at: 10)
        _ = try store.enqueue([outgoing(3, to: alice), outgoing(4, to: alice), outgoing(5, to: bob)], sender: me)
        _ = try store.markDelivered(ids: [messageID(3)], by: alice, at: 20)
        _ = try store.recordRefusal(ids: [mid(4)], by: key(alice), reason: 1, at: 30)
        XCTAssertEqual(try store.deleteConversation(with: key(alice)), 3)
        XCTAssertEqual(try store.messages(peer: alice, after: nil, limit: 10), [])
        XCTAssertEqual(try store.messages(peer: bob, after: nil, limit: 10).count, 2, "other conversations stay")
        XCTAssertEqual(try store.incomingUsage(from: key(alice)).messages, 0)
        XCTAssertEqual(try store.pendingRecipients(), [key(bob): 1])
        let counts = try store.counts()
        XCTAssertEqual([counts.queued, counts.delivered, counts.received], [1, 0, 1])
        try store.close()
        let orphans = try DatabaseQueue(path: databasePath).read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM message_body WHERE row_id NOT IN (SELECT row_id FROM message))
                         + (SELECT count(*) FROM message_refusal WHERE row_id NOT IN (SELECT row_id FROM message))
                    """)
        }
        XCTAssertEqual(orphans, 0, "no body or refusal is left behind")
    }

    func testARefusalIsRecordedForOurQueuedMessagesToThatPeerOnly() throws {
        let store = try open()
        _ = try store.enqueue([outgoing(1, to: alice), outgoing(2, to: bob)], sender: me)
        let refused = try store.recordRefusal(ids: [mid(1), mid(2)], by: key(alice), reason: 3, at: 40)
        XCTAssertEqual(refused.map(\.id.hex), [messageID(1)], "bob's message is not alice's to refuse")
        XCTAssertEqual(try store.message(id: messageID(1))?.state, .queued, "a refused message stays queued")
        XCTAssertEqual(try store.refusal(ofMessageRow: refused[0].rowID)?.reason, 3)
        XCTAssertEqual(try store.refusal(ofMessageRow: refused[0].rowID)?.at, 40)
        _ = try store.recordRefusal(ids: [mid(1)], by: key(alice), reason: 1, at: 50)
        XCTAssertEqual(try store.refusal(ofMessageRow: refused[0].rowID)?.reason, 1, "the last refusal is kept")
    }

    func testUnusedFirstSeenIdentitiesExpireAndEveryOtherPeerStays() throws {
        let store = try open()
        let dave = Self.identity(0xd4)
        let erin = Self.identity(0xe7)
        let frank = Self.identity(0xf0)
        try store.upsertPeer(peerRecord(alice, name: "alice", seen: 10))  // pinned, unused, old: expires
        try store.upsertPeer(peerRecord(bob, name: "bob", seen: 10))  // a message exchanged
        try store.upsertPeer(peerRecord(carol, name: "carol", seen: 500))  // seen recently
        var verified = peerRecord(dave, name: "dave", seen: 10)
        verified.trust = .verified
        try store.upsertPeer(verified)
        var blocked = peerRecord(erin, name: "erin", seen: 10)
        blocked.trust = .blocked
        try store.upsertPeer(blocked)
        try store.upsertPeer(peerRecord(frank, name: "frank", seen: 10))  // online now (kept by the caller)
        _ = try store.storeIncoming([incoming(1, from: bob)], at: 10)
        let expired = try store.expireUnusedPeers(lastSeenBefore: 100, keep: [key(frank)])
        XCTAssertEqual(expired, [key(alice)])
        XCTAssertNil(try store.peer(identity: key(alice)))
        for kept in [bob, carol, dave, erin, frank] { XCTAssertNotNil(try store.peer(identity: key(kept))) }
        try store.setNickname(identity: key(frank), "Frank")
        XCTAssertEqual(try store.expireUnusedPeers(lastSeenBefore: 100), [], "a nicknamed key is the person's decision")
    }

    // MARK: - Inbox

    func testStoreIncomingDeduplicatesBySenderAndID() throws {
        let store = try open()
        let first = try store.storeIncoming(
            [incoming(1, from: alice, sequence: 1), incoming(1, from: alice, sequence: 1)],
            at: 500)
        XCTAssertEqual(first.map(\.isNew), [true, false])
        XCTAssertEqual(first[0].message, first[1].message)
        XCTAssertEqual(first[0].message.state, .received)
        XCTAssertEqual(first[0].message.receivedAt, 500)

        // Retransmitted later: the existing row, unchanged.
        let again = try store.storeIncoming([incoming(1, from: alice, sequence: 1, body: "changed")], at: 900)
        XCTAssertEqual(again.map(\.isNew), [false])
        XCTAssertEqual(again[0].message, first[0].message)

        // Same id from someone else is a different message.
        let other = try store.storeIncoming([incoming(1, from: bob, sequence: 4)], at: 901)
        XCTAssertEqual(other.map(\.isNew), [true])
        XCTAssertNotEqual(other[0].message.rowID, first[0].message.rowID)
        XCTAssertEqual(try store.message(id: messageID(1), sender: bob)?.sequence, 4)

        XCTAssertEqual(try store.messages(peer: nil, after: nil, limit: 100).count, 2)
        XCTAssertEqual(try store.counts().received, 2)
    }

    // MARK: - History

    func testHistoryPagesForwardAndBackwardWithPeerFilter() throws {
        let store = try open()
        // Row order: a-out1, a-in2, b-in3, a-out4, b-out5, a-in6
        _ = try store.enqueue([outgoing(1, to: alice)], sender: me)
        _ = try store.storeIncoming([incoming(2, from: alice), incoming(3, from: bob)], at: 1)
        _ = try store.enqueue([outgoing(4, to: alice), outgoing(5, to: bob)], sender: me)
        _ = try store.storeIncoming([incoming(6, from: alice)], at: 2)

        let all = try store.messages(peer: nil, after: nil, limit: 100)
        XCTAssertEqual(all.map(\.id.hex), (1...6).map(messageID))
        XCTAssertEqual(all.map(\.rowID), all.map(\.rowID).sorted())
        let rows = all.map(\.rowID)

        // Forward from a cursor.
        XCTAssertEqual(try store.messages(peer: nil, after: nil, limit: 2).map(\.rowID), Array(rows[0...1]))
        XCTAssertEqual(try store.messages(peer: nil, after: rows[1], limit: 2).map(\.rowID), Array(rows[2...3]))
        XCTAssertEqual(try store.messages(peer: nil, after: rows[5], limit: 2), [])

        // Backward: the LAST `limit` rows before, still ascending.
        XCTAssertEqual(
            try store.messages(peer: nil, after: nil, before: rows[4], limit: 2).map(\.rowID),
            Array(rows[2...3]))
        XCTAssertEqual(
            try store.messages(peer: nil, after: nil, before: Int64.max, limit: 3).map(\.rowID),
            Array(rows[3...5]))
        XCTAssertEqual(
            try store.messages(peer: nil, after: rows[1], before: rows[4], limit: 10).map(\.rowID),
            Array(rows[2...3]))

        // Peer filter: both directions with that peer.
        XCTAssertEqual(
            try store.messages(peer: alice, after: nil, limit: 100).map(\.id.hex), [1, 2, 4, 6].map(messageID))
        XCTAssertEqual(try store.messages(peer: bob, after: nil, limit: 100).map(\.id.hex), [3, 5].map(messageID))
        XCTAssertEqual(try store.messages(peer: alice, after: rows[1], limit: 1).map(\.id.hex), [messageID(4)])
        XCTAssertEqual(
            try store.messages(peer: alice, after: nil, before: rows[5], limit: 2).map(\.id.hex),
            [2, 4].map(messageID))
        XCTAssertEqual(try store.messages(peer: carol, after: nil, limit: 100), [])
    }

    // MARK: - Peers

    func testPeersUpsertAndLookup() throws {
        let store = try open()
        try store.upsertPeer(peerRecord(alice, name: "alice", address: "10.0.0.1:7000", seen: 100))
        try store.upsertPeer(peerRecord(bob, name: "bob", address: "10.0.0.2:7000", seen: 100))
        XCTAssertEqual(
            try store.peer(identity: key(alice)), peerRecord(alice, name: "alice", address: "10.0.0.1:7000", seen: 100))
        XCTAssertNil(try store.peer(identity: key(carol)))

        // Upsert overwrites, but the earliest firstSeen is kept.
        var updated = peerRecord(alice, name: "alice", address: "10.0.0.9:7000", seen: 300)
        updated.card = [9, 9]
        updated.cardSequence = 2
        try store.upsertPeer(updated)
        let stored = try XCTUnwrap(try store.peer(identity: key(alice)))
        XCTAssertEqual(stored.card, [9, 9])
        XCTAssertEqual(stored.cardSequence, 2)
        XCTAssertEqual(stored.firstSeen, 100)
        XCTAssertEqual(stored.lastSeen, 300)

        XCTAssertEqual(try store.peers(named: "alice").map(\.identity), [key(alice)])
        XCTAssertEqual(try store.peers(named: "nobody"), [])
        XCTAssertEqual(try store.peer(atAddress: "10.0.0.9:7000")?.identity, key(alice))
        XCTAssertNil(try store.peer(atAddress: "10.0.0.1:7000"))
        XCTAssertEqual(try store.peers().map(\.identity), [key(alice), key(bob)])

        // touchPeer moves lastSeen forward only, and keeps the address when none is given.
        try store.touchPeer(identity: key(bob), at: 500, address: "10.0.0.3:7001")
        try store.touchPeer(identity: key(bob), at: 400, address: nil)
        XCTAssertEqual(try store.peer(identity: key(bob))?.lastSeen, 500)
        XCTAssertEqual(try store.peer(identity: key(bob))?.lastAddress, "10.0.0.3:7001")
        XCTAssertEqual(try store.peer(atAddress: "10.0.0.3:7001")?.identity, key(bob))

        try store.setTrust(identity: key(bob), .verified)
        XCTAssertEqual(try store.peer(identity: key(bob))?.trust, .verified)

        assertStoreError(try store.setTrust(identity: key(carol), .blocked), .notFound("peer \(carol)"))
        assertStoreError(try store.touchPeer(identity: key(carol), at: 1, address: nil), .notFound("peer \(carol)"))
        var dangling = peerRecord(bob, name: "bob")
        dangling.replacedBy = key(carol)
        assertStoreError(
            try store.upsertPeer(dangling),
            .conflict("peer \(bob) is marked replaced by unknown peer \(carol)"))
        var nulName = peerRecord(carol, name: "carol")
        nulName.displayName = "car\u{0}ol"
        XCTAssertThrowsError(try store.upsertPeer(nulName))
        XCTAssertNil(try store.peer(identity: key(carol)))
    }

    // MARK: - Trust: replacement, nicknames, forgetting

    func testReplacingAKeyMovesTheQueueAndRecordsHistory() throws {
        let store = try open()
        try store.upsertPeer(peerRecord(alice, name: "alice", address: "10.0.0.1:7000"))
        try store.upsertPeer(peerRecord(carol, name: "alice", address: "10.0.0.1:7000"))
        _ = try store.enqueue([outgoing(1, to: alice), outgoing(2, to: alice), outgoing(3, to: alice)], sender: me)
        _ = try store.markDelivered(ids: [messageID(1)], by: alice, at: 20)

        XCTAssertEqual(
            try store.replacePeer(old: key(alice), new: key(carol), at: 30), 2, "the two undelivered ones move")
        XCTAssertEqual(try store.peer(identity: key(alice))?.replacedBy, key(carol))
        XCTAssertEqual(try store.peer(identity: key(carol))?.trust, .verified, "a person compared the new key")
        XCTAssertEqual(try store.pendingOutgoing(to: carol, limit: 10).map(\.id.hex), [messageID(2), messageID(3)])
        XCTAssertEqual(try store.pendingOutgoing(to: alice, limit: 10), [])
        XCTAssertEqual(
            try store.message(id: messageID(1))?.recipient.hex, alice, "delivered history stays with the old key")
        XCTAssertEqual(try store.previousKeys(of: key(carol)).map(\.identity), [key(alice)])
        XCTAssertEqual(try store.keyChanges(involving: key(carol)).map(\.oldIdentity), [key(alice)])
        assertStoreError(
            try store.replacePeer(old: key(alice), new: key(carol), at: 40),
            .conflict("peer \(alice) was already replaced by \(carol)"))
        assertStoreError(try store.replacePeer(old: key(carol), new: key(bob), at: 40), .notFound("peer \(bob)"))
    }

    func testNicknamesAndForgetting() throws {
        let store = try open()
        try store.upsertPeer(peerRecord(alice, name: "alice"))
        try store.setNickname(identity: key(alice), "Alice (lab)")
        XCTAssertEqual(try store.peer(identity: key(alice))?.label, "Alice (lab)")
        var rec = try XCTUnwrap(try store.peer(identity: key(alice)))
        rec.cardSequence += 1
        try store.upsertPeer(rec)
        XCTAssertEqual(
            try store.peer(identity: key(alice))?.nickname, "Alice (lab)", "a card update keeps the nickname")
        try store.setNickname(identity: key(alice), nil)
        XCTAssertEqual(try store.peer(identity: key(alice))?.label, "alice")
        assertStoreError(try store.setNickname(identity: key(bob), "x"), .notFound("peer \(bob)"))

        _ = try store.enqueue([outgoing(1, to: alice)], sender: me)
        try store.upsertPeer(peerRecord(bob, name: "bob"))
        _ = try store.replacePeer(old: key(alice), new: key(bob), at: 5)
        try store.forgetPeer(identity: key(bob))
        XCTAssertNil(try store.peer(identity: key(bob)))
        XCTAssertNil(try store.peer(identity: key(alice))?.replacedBy, "nothing points at a forgotten peer")
        XCTAssertEqual(try store.peer(identity: key(alice))?.trust, .blocked, "the retired key stays refused")
        XCTAssertEqual(try store.pendingOutgoing(to: bob, limit: 10).count, 1, "its queue is kept for a first contact")
        assertStoreError(try store.forgetPeer(identity: key(bob)), .notFound("peer \(bob)"))
    }

    // MARK: - Settings

    func testSettingsRoundTripAndDelete() throws {
        var store: Store? = try open()
        XCTAssertNil(try store!.setting("display-name"))
        try store!.setSetting("display-name", "alice")
        try store!.setSetting("display-name", "alice2")
        store = nil
        store = try open()
        XCTAssertEqual(try store!.setting("display-name"), "alice2")
        try store!.setSetting("display-name", nil)
        XCTAssertNil(try store!.setting("display-name"))
        XCTAssertThrowsError(try store!.setSetting("", "x"))
    }

    // MARK: - Durability

    /// Bookkeeping writes skip their own fsync, but the message path stays FULL: the
    /// connection's synchronous level is back to FULL (2) after each relaxed write.
    func testRelaxedWritesRestoreFullSynchronous() throws {
        let store = try open(.full)
        func level() throws -> Int { try store.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 } }
        XCTAssertEqual(try level(), 2)
        let level1 = try store.relaxedWrite { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
        XCTAssertEqual(level1, 1, "relaxed writes commit with synchronous=NORMAL")
        XCTAssertEqual(try level(), 2)
    }

    // MARK: - The file

    func testWALModeIsOnInTheConnectionAndInTheFileHeader() throws {
        let store = try open()
        XCTAssertEqual(try store.journalMode(), "wal")
        try store.checkIntegrity()
        try store.close()
        assertStoreError(try store.counts(), .closed(path: databasePath))
        try store.close()
        // SQLite file header bytes 18 and 19 (write/read format version) are 2 in WAL mode.
        let header = try XCTUnwrap(FileHandle(forReadingAtPath: databasePath)).readData(ofLength: 20)
        XCTAssertEqual(Array(header.prefix(16)), Array("SQLite format 3\0".utf8))
        XCTAssertEqual(Array(header.suffix(2)), [2, 2])
    }

    func testNewDatabaseFileIsOwnerOnly() throws {
        _ = try open()
        let attributes = try FileManager.default.attributesOfItem(atPath: databasePath)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
    }

    func testGarbageFileIsReportedCorruptNotReplaced() throws {
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        try garbage.write(to: URL(fileURLWithPath: databasePath))
        XCTAssertThrowsError(try open()) { error in
            guard case let .corrupt(path, _)? = error as? StoreError else {
                return XCTFail("expected corrupt, got \(error)")
            }
            XCTAssertEqual(path, databasePath)
            XCTAssertTrue(String(describing: error).contains(databasePath))
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: databasePath)), garbage, "the file must be left alone")
    }

    func testDamagedHeaderOfAnExistingDatabaseIsCorrupt() throws {
        let store = try open()
        _ = try store.enqueue([outgoing(1, to: alice)], sender: me)
        try store.close()
        let handle = try XCTUnwrap(FileHandle(forWritingAtPath: databasePath))
        handle.write(Data(repeating: 0x41, count: 16))
        handle.closeFile()
        XCTAssertThrowsError(try open()) { error in
            guard case let .corrupt(path, _)? = error as? StoreError else {
                return XCTFail("expected corrupt, got \(error)")
            }
            XCTAssertEqual(path, databasePath)
        }
    }

    func testSecondOpenOfTheSameDatabaseIsLocked() throws {
        var first: Store? = try open()
        _ = try first!.enqueue([outgoing(1, to: alice)], sender: me)
        assertStoreError(try open(), .locked(path: databasePath))
        first = nil
        let second = try open()
        XCTAssertEqual(try second.pendingOutgoing(to: alice, limit: 10).count, 1)
    }

    func testMissingDirectoryIsAnIOErrorNamingTheFile() throws {
        let missing = directory + "/missing"
        XCTAssertThrowsError(try Store(directory: missing)) { error in
            guard case let .io(path, _)? = error as? StoreError else { return XCTFail("expected io, got \(error)") }
            XCTAssertEqual(path, missing + "/parley.sqlite")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: missing))
    }

    func testMalformedIdentifiersAreRefused() throws {
        let store = try open()
        // Messages themselves are typed (`NewOutgoingMessage`): a malformed id or key
        // cannot reach the store; what still comes as text is checked.
        XCTAssertThrowsError(try store.pendingOutgoing(to: alice + "\0", limit: 1))
        XCTAssertThrowsError(try store.peers(named: "a\0b"))
        XCTAssertEqual(try store.counts().queued, 0)
    }

    // MARK: - Bodies apart from their rows

    /// Marking a message delivered or read must not write its body again: SQLite rewrites
    /// a whole row (overflow pages included) when an UPDATE changes its size, which is why
    /// bodies live in `message_body`. The WAL is where every written page goes first.
    func testMarkingA64KiBMessageDeliveredDoesNotRewriteItsBody() throws {
        let store = try open()
        let body = String(repeating: "b", count: 65_000)
        let sent = try store.enqueue([outgoing(1, to: bob, body: body)], sender: me)
        let wal = databasePath + "-wal"
        func walBytes() throws -> Int { (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0 }
        let before = try walBytes()
        XCTAssertGreaterThan(before, 65_000, "the body went through the WAL once")
        let delivered = try store.markDelivered(ids: [sent[0].id.hex], by: bob, at: 5)
        XCTAssertEqual(delivered.map(\.rowID), [sent[0].rowID])
        let growth = try walBytes() - before
        XCTAssertLessThan(growth, 16_384, "marking delivered wrote \(growth) bytes: the body was rewritten")
        XCTAssertEqual(try store.message(id: sent[0].id.hex, sender: me)?.body, body)
    }

    /// A database from before message-bodies-v1 keeps every body, now in message_body.
    func testBodiesMoveToTheirOwnTableOnUpgrade() throws {
        let queue = try DatabaseQueue(path: databasePath)
        try Schema.migrator.migrate(queue, upTo: "rooms-v1")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO message (id, direction, sender, recipient, peer, sequence, created_at, body, state)
                    VALUES (?, 'outgoing', ?, ?, ?, 1, 1, x'6f6c64', 'queued')
                    """, arguments: [messageID(1), me, bob, bob])
        }
        try queue.close()
        let store = try open()
        XCTAssertEqual(try store.message(id: messageID(1), sender: me)?.body, "old")
        XCTAssertEqual(try store.pendingOutgoing(to: bob, limit: 10).map(\.body), ["old"])
        let columns = try store.read { db in try db.columns(in: "message").map(\.name) }
        XCTAssertFalse(columns.contains("body"), "\(columns)")
    }

    /// The wire allows a chat with an empty body (0 bytes of UTF-8): the store must keep it
    /// as an empty body (`message_body.body` is NOT NULL), and the rest of the batch with it.
    /// trust-v2: a pending "key change" (a new identity under a known name) becomes a peer of
    /// its own awaiting approval, and the old peer gets back the trust it had.
    func testPendingKeyChangesBecomePeersAwaitingApprovalOnUpgrade() throws {
        let newKey = IdentityKeyPair.generate()
        let card = try Card.issue(
            identity: newKey, noiseKey: NoiseStaticKeyPair.generate().publicKey, displayName: "alice",
            hostName: "h", issuedAt: 5, sequence: 3)
        let newID = newKey.publicKey.hex
        let queue = try DatabaseQueue(path: databasePath)
        try Schema.migrator.migrate(queue, upTo: "message-bodies-v1")
        try queue.write { db in
            try db.execute(
                sql: """
                    INSERT INTO peer (identity, display_name, host_name, card, card_sequence, noise_key, trust,
                                      first_seen, last_seen, last_address, replaced_by)
                    VALUES (?, 'alice', '', x'00', 1, ?, 'changed', 1, 2, '10.0.0.1:7', NULL)
                    """, arguments: [alice, String(repeating: "ab", count: 32)])
            try db.execute(
                sql: """
                    INSERT INTO key_change (display_name, old_identity, new_identity, new_card, address, detected_at,
                                            status, prior_trust)
                    VALUES ('alice', ?, ?, ?, '10.0.0.1:7', 9, 'pending', 'verified')
                    """, arguments: [alice, newID, Data(card.encoded())])
        }
        try queue.close()
        let store = try open()
        XCTAssertEqual(try store.peer(identity: key(alice))?.trust, .verified, "the old peer's trust is back")
        let held = try XCTUnwrap(try store.peer(identity: newKey.publicKey))
        XCTAssertEqual(held.trust, .pending)
        XCTAssertEqual(held.displayName, "alice")
        XCTAssertEqual(held.cardSequence, 3)
        XCTAssertNil(held.replacedBy)
        XCTAssertEqual(try store.keyChange(id: 1)?.status, .rejected)
    }

    func testAnEmptyIncomingBodyIsStoredAsEmpty() throws {
        let store = try open()
        let stored = try store.storeIncoming(
            [incoming(1, from: alice, body: ""), incoming(2, from: alice, sequence: 2)], at: 5)
        XCTAssertEqual(stored.map(\.isNew), [true, true])
        XCTAssertEqual(try store.message(id: messageID(1), sender: alice)?.body, "")
        XCTAssertEqual(try store.message(id: messageID(2), sender: alice)?.body, "incoming 2")
    }
}
