import Foundation
import NIOCore
import NIOEmbedded
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// Two whole nodes in one process (real stores, real handshakes, real files) sending a file:
/// the offer, the user's accept, the hash list, chunks and checkpoints, the final hash and
/// the rename; a link cut resumes from the last durable chunk, not from zero.
final class FileTransferInProcessTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var alice: InProcessNode!
    var bob: InProcessNode!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        var options = NodeOptions()
        options.fileInlineDigestBytes = 64 << 20
        options.fileDiskWorkInline = true
        alice = try InProcessNode(name: "alice", loop: loop, clock: clock, options: options)
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock, options: options)
        alice.node.ownIdentity.stateDirectory = alice.directory
        bob.node.ownIdentity.stateDirectory = bob.directory
    }

    override func tearDownWithError() throws {
        alice.node.stop()
        bob.node.stop()
        _ = try? loop.syncShutdownGracefully()
        // XCTest keeps test case objects alive: delete the state and source directories here.
        for dir in [alice.directory, bob.directory] + sourceDirectories {
            try? FileManager.default.removeItem(atPath: dir)
        }
        alice = nil
        bob = nil
    }

    private var sourceDirectories: [String] = []

    /// A bob with a receive quota for strangers of `strangerQuotaBytes`.
    private func replaceBob(strangerQuotaBytes: Int) throws {
        bob.node.stop()
        try? FileManager.default.removeItem(atPath: bob.directory)
        var options = NodeOptions()
        options.fileInlineDigestBytes = 64 << 20
        options.fileDiskWorkInline = true
        options.quota.stranger.bytes = strangerQuotaBytes
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock, options: options)
        bob.node.ownIdentity.stateDirectory = bob.directory
    }

    private func sourceFile(bytes: Int) throws -> (String, [UInt8]) {
        var content = [UInt8](repeating: 0, count: bytes)
        for i in stride(from: 0, to: bytes, by: 4_096) { content[i] = UInt8(truncatingIfNeeded: i / 4_096) }
        content[bytes - 1] = 0x5A
        // Outside alice's state directory (files there are never sent).
        let dir = NSTemporaryDirectory() + "parley-files-source-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        sourceDirectories.append(dir)
        let path = dir + "/source.bin"
        try Data(content).write(to: URL(fileURLWithPath: path))
        return (path, content)
    }

    /// What the descriptor socket does with a `files.send`: the file opened as the caller,
    /// copied into alice's state from the descriptor, the copy offered.
    private func send(_ path: String) throws -> FileTransferRecord {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let copy = try OutgoingCopies(stateDirectory: alice.node.ownIdentity.stateDirectory).copy(
            descriptor: fd, name: "source.bin")
        let future = try alice.node.sendFiles(
            to: "bob", staged: [.init(copy: copy, name: (path as NSString).lastPathComponent, mediaType: nil)],
            caption: "the data")
        loop.run()
        return try XCTUnwrap(try future.wait().first)
    }

    private func incoming(_ id: String) throws -> FileTransferRecord {
        try XCTUnwrap(try bob.node.store.transfers(idPrefix: id, limit: 1).first)
    }

    func testAFileIsOfferedAcceptedVerifiedAndPutInPlace() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, content) = try sourceFile(bytes: 300_000)
        let sent = try send(path)
        try link.exchange()
        let offered = try incoming(sent.transfer.hex)
        XCTAssertEqual(offered.state, .offered, "an unverified sender's file waits for the user")
        XCTAssertEqual(offered.caption, "the data")
        XCTAssertFalse(FileManager.default.fileExists(atPath: bob.directory + "/files/source.bin"))

        _ = try bob.node.acceptFile(String(sent.transfer.hex.prefix(8)))
        try link.exchange()
        let done = try incoming(sent.transfer.hex)
        XCTAssertEqual(done.state, .completed)
        XCTAssertEqual(done.savedPath, bob.directory + "/files/source.bin")
        XCTAssertEqual(
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: bob.directory + "/files/source.bin"))), content)
        XCTAssertEqual(try alice.node.store.transfers(idPrefix: sent.transfer.hex, limit: 1).first?.state, .completed)
        let kinds = bob.events.compactMap { e -> FileEventKind? in
            if case let .file(_, kind, _) = e { return kind } else { return nil }
        }
        XCTAssertEqual(kinds.first, .offered)
        XCTAssertEqual(kinds.last, .completed)
    }

    func testALinkCutResumesFromTheLastDurableChunk() throws {
        // 300 chunks of 64 KiB: more than the window (256), several checkpoints (every 64).
        let (path, content) = try sourceFile(bytes: 300 * 65_536 - 10)
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let sent = try send(path)
        try link.exchange()
        _ = try bob.node.acceptFile(sent.transfer.hex)
        // Bob's want goes out; alice's chunks come back, bob's fileHave records are held.
        try link.exchange(.responderToInitiator)
        try link.exchange(.initiatorToResponder)
        let durable = try incoming(sent.transfer.hex).verified
        XCTAssertEqual(durable, 256, "the whole first window, checkpointed every 64 chunks")
        // The link is cut (no goodbye), then a new session.
        link.initiatorConnection.drop()
        link.responderConnection.drop()
        loop.run()
        let again = try InProcessLink(from: alice, to: bob, loop: loop)
        let moved = try again.exchange()
        let done = try incoming(sent.transfer.hex)
        XCTAssertEqual(done.state, .completed)
        XCTAssertLessThan(moved.forward, 50 * 65_536, "only the last 44 chunks were sent again")
        XCTAssertEqual(try [UInt8](Data(contentsOf: URL(fileURLWithPath: try XCTUnwrap(done.savedPath)))), content)
    }

    /// Runs `sql` on bob's own database file (on his store's connection, outside its write
    /// path), to damage it the way a failing disk or a broken file would.
    private func damageBobsStore(_ sql: String) throws {
        try bob.node.store.database.writeWithoutTransaction { db in try db.execute(sql: sql) }
    }

    /// The offer's answer at alice, after one exchange.
    private func offerAnswer(_ link: InProcessLink, bytes: Int = 200_000) throws -> (FileTransferRecord, String) {
        let (path, _) = try sourceFile(bytes: bytes)
        let sent = try send(path)
        try link.exchange()
        let out = try XCTUnwrap(try alice.node.store.transfers(idPrefix: sent.transfer.hex, limit: 1).first)
        return (out, sent.transfer.hex)
    }

    /// A file offer is judged against what the receiver keeps from its sender; when the
    /// store cannot count that, the offer is refused with a reason the sender sees, never
    /// taken as if nothing were stored.
    func testAnOfferIsRefusedWhenTheReceiverCannotCountWhatItKeepsFromTheSender() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        try damageBobsStore("ALTER TABLE message_body RENAME TO message_body_lost")
        let (out, id) = try offerAnswer(link)
        XCTAssertEqual(out.state, .failed, "refused, not offered to bob's user on an unknown count")
        XCTAssertEqual(out.error, "the other side says: " + Node.offerStoreFailureReason)
        // Bob's own record of the refusal is a write, which this damage stops too (logged).
        XCTAssertNil(try bob.node.store.transfers(idPrefix: id, limit: 1).first)
    }

    /// The same when the store cannot look up the transfers (an id already used, the
    /// offers waiting for an answer): the lookups' errors are not "none".
    func testAnOfferIsRefusedWhenTheReceiverCannotReadItsTransfers() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        try damageBobsStore("ALTER TABLE file_transfer RENAME TO file_transfer_lost")
        let (out, _) = try offerAnswer(link)
        XCTAssertEqual(out.state, .failed, "answered at once, not left waiting for an answer that never comes")
        XCTAssertEqual(out.error, "the other side says: " + Node.offerStoreFailureReason)
    }

    /// The user accepts while the store cannot count: the accept fails with the store's
    /// error and the offer stays offered (accepting again works once the store does).
    func testAcceptingWhileTheStoreCannotCountFailsAndKeepsTheOffer() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (out, id) = try offerAnswer(link)
        XCTAssertEqual(out.state, .offered)
        let counts = bob.node.messageDriver.quota.store
        bob.node.messageDriver.quota.store = UncountableQuotaStore(counts)
        XCTAssertThrowsError(try bob.node.acceptFile(String(id.prefix(8)))) { error in
            guard case FileError.storage = error else { return XCTFail("\(error)") }
        }
        try link.exchange()
        XCTAssertEqual(try incoming(id).state, .offered, "still waiting for the user")
        bob.node.messageDriver.quota.store = counts
        _ = try bob.node.acceptFile(String(id.prefix(8)))
        try link.exchange()
        XCTAssertEqual(try incoming(id).state, .completed)
    }

    /// A progress write the store refuses is logged, not swallowed, and the transfer goes
    /// on: the stored count only lags behind the disk (a resume would start earlier).
    func testAProgressWriteTheStoreRefusesIsLoggedAndTheFileStillArrives() throws {
        let bobLog = CollectedLogLines()
        bob.node.stop()
        try? FileManager.default.removeItem(atPath: bob.directory)
        var options = NodeOptions()
        options.fileInlineDigestBytes = 64 << 20
        options.fileDiskWorkInline = true
        bob = try InProcessNode(name: "bob", loop: loop, clock: clock, options: options, log: bobLog.logger())
        bob.node.ownIdentity.stateDirectory = bob.directory
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        try damageBobsStore(
            """
            CREATE TRIGGER refuse_progress BEFORE UPDATE OF verified ON file_transfer
            BEGIN SELECT RAISE(ABORT, 'injected: progress cannot be written'); END
            """)
        let (path, content) = try sourceFile(bytes: 300_000)
        let sent = try send(path)
        try link.exchange()
        _ = try bob.node.acceptFile(String(sent.transfer.hex.prefix(8)))
        try link.exchange()
        let done = try incoming(sent.transfer.hex)
        XCTAssertEqual(done.state, .completed)
        XCTAssertEqual(
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: bob.directory + "/files/source.bin"))), content)
        XCTAssertTrue(
            bobLog.lines.contains { $0.contains("could not record an incoming transfer's progress") },
            "\(bobLog.lines)")
    }

    func testAnOfferRefusedAtOnceIsListedAtTheReceiverWithTheReason() throws {
        // Bob takes at most 100 kB from a stranger: alice's 200 kB file is refused on arrival.
        try replaceBob(strangerQuotaBytes: 100_000)
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, _) = try sourceFile(bytes: 200_000)
        let sent = try send(path)
        try link.exchange()
        let out = try XCTUnwrap(try alice.node.store.transfers(idPrefix: sent.transfer.hex, limit: 1).first)
        XCTAssertEqual(out.state, .failed)
        XCTAssertTrue(out.error?.contains("quota") == true, out.error ?? "no error")
        let refused = try incoming(sent.transfer.hex)
        XCTAssertEqual(refused.state, .failed, "the receiver lists what it refused")
        XCTAssertEqual(
            out.error, "the other side says: " + (refused.error ?? "-"), "the receiver lists the reason it gave")
        XCTAssertEqual(refused.name, "source.bin")
        XCTAssertEqual(refused.caption, "", "nothing shown from a refused offer but its name")
        let failedEvents = bob.events.filter { e in
            if case let .file(_, kind, _) = e { return kind == .failed } else { return false }
        }
        XCTAssertEqual(failedEvents.count, 1, "one file.failed event at the receiver")
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: bob.directory + "/files")) ?? [], [])

        // The same offer again (a sender that did not hear the answer): one row, one event.
        bob.node.connection(link.responderConnection, receivedFile: .offer(try XCTUnwrap(out.offer)))
        try link.exchange()
        XCTAssertEqual(try bob.node.store.transfers(idPrefix: sent.transfer.hex, limit: 5).count, 1)
        XCTAssertEqual(try incoming(sent.transfer.hex).state, .failed)
        let failedAgain = bob.events.filter { e in
            if case let .file(_, kind, _) = e { return kind == .failed } else { return false }
        }
        XCTAssertEqual(failedAgain.count, 1, "no second event for the same refused offer")
    }

    func testRefusedOffersKeptPerPeerAreBounded() throws {
        try replaceBob(strangerQuotaBytes: 1_000)
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, _) = try sourceFile(bytes: 5_000)
        let extra = 5
        for _ in 0..<(Node.maxRefusedOffersKeptPerPeer + extra) {
            _ = try send(path)
            try link.exchange()
            // One offer per RefusalRecordLimit interval, so every refusal is listed: the
            // bound under test here is the row cap (the rate has its own test below).
            loop.advanceTime(by: .nanoseconds(RefusalRecordLimit.defaultInterval.wholeNanoseconds))
        }
        let kept = try bob.node.store.recentTransfers(limit: 1_000).filter { $0.direction == .incoming }
        XCTAssertEqual(kept.count, Node.maxRefusedOffersKeptPerPeer, "the oldest refused offers are deleted")
        XCTAssertTrue(kept.allSatisfy { $0.state == .failed })
        let sentOut = try alice.node.store.recentTransfers(limit: 1_000).filter { $0.direction == .outgoing }
        XCTAssertEqual(sentOut.count, Node.maxRefusedOffersKeptPerPeer + extra)
        XCTAssertTrue(sentOut.allSatisfy { $0.state == .failed }, "every sender's transfer heard the refusal")
    }

    /// Refusals faster than RefusalRecordLimit allows: each answered (the sender's transfer
    /// fails with the reason), but only the burst is stored and announced.
    func testRefusalsFasterThanTheRateAreAnsweredButNotListed() throws {
        try replaceBob(strangerQuotaBytes: 1_000)
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, _) = try sourceFile(bytes: 5_000)
        let offers = RefusalRecordLimit.defaultBurst + 12
        for _ in 0..<offers {
            _ = try send(path)
            try link.exchange()
        }
        let kept = try bob.node.store.recentTransfers(limit: 1_000).filter { $0.direction == .incoming }
        XCTAssertEqual(kept.count, RefusalRecordLimit.defaultBurst)
        let failedEvents = bob.events.filter { e in
            if case let .file(_, kind, _) = e { return kind == .failed } else { return false }
        }
        XCTAssertEqual(failedEvents.count, RefusalRecordLimit.defaultBurst, "no event for an unlisted refusal")
        let sentOut = try alice.node.store.recentTransfers(limit: 1_000).filter { $0.direction == .outgoing }
        XCTAssertEqual(sentOut.count, offers)
        XCTAssertTrue(sentOut.allSatisfy { $0.state == .failed }, "every refusal was answered")

        // An interval later, the next refusal is listed again.
        loop.advanceTime(by: .nanoseconds(RefusalRecordLimit.defaultInterval.wholeNanoseconds))
        _ = try send(path)
        try link.exchange()
        XCTAssertEqual(
            try bob.node.store.recentTransfers(limit: 1_000).filter { $0.direction == .incoming }.count,
            RefusalRecordLimit.defaultBurst + 1)
    }

    func testTheDaemonsCopyChangingBeforeTheAcceptFailsTheTransferAtBothEnds() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, _) = try sourceFile(bytes: 100_000)
        let sent = try send(path)
        try link.exchange()
        let copy = try XCTUnwrap(sent.sourcePath)
        XCTAssertTrue(copy.hasPrefix(alice.directory + "/outgoing/"), copy)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: copy))
        _ = try bob.node.acceptFile(sent.transfer.hex)
        try link.exchange()
        let out = try XCTUnwrap(try alice.node.store.transfers(idPrefix: sent.transfer.hex, limit: 1).first)
        XCTAssertEqual(out.state, .failed)
        XCTAssertTrue(out.error?.contains("changed") == true)
        XCTAssertEqual(try incoming(sent.transfer.hex).state, .failed)
        XCTAssertEqual((try? FileManager.default.contentsOfDirectory(atPath: bob.directory + "/files")) ?? [], [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy), "the copy goes when its transfer ends")
    }

    /// Issue 28: the daemon works from its own copy, so the person may change or delete the
    /// original as soon as `files.send` answered, and a restart does not need it either.
    func testTheOriginalMayChangeOnceSentAndTheCopyGoesWhenTheTransferEnds() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, content) = try sourceFile(bytes: 200_000)
        let sent = try send(path)
        try FileManager.default.removeItem(atPath: path)
        try link.exchange()
        _ = try bob.node.acceptFile(sent.transfer.hex)
        try link.exchange()
        XCTAssertEqual(try incoming(sent.transfer.hex).state, .completed)
        XCTAssertEqual(
            try [UInt8](Data(contentsOf: URL(fileURLWithPath: bob.directory + "/files/source.bin"))), content)
        XCTAssertEqual(
            (try? FileManager.default.contentsOfDirectory(atPath: alice.directory + "/outgoing")) ?? [], [],
            "the copy is removed once the transfer completed")
    }

    /// files.open: the completed file, read-only; anything else is refused with the state.
    func testOpeningAReceivedFileGivesAReadOnlyDescriptorOfTheCompletedFileOnly() throws {
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        let (path, content) = try sourceFile(bytes: 70_000)
        let sent = try send(path)
        try link.exchange()
        XCTAssertThrowsError(try bob.node.openReceivedFile(sent.transfer.hex), "still an offer")
        XCTAssertThrowsError(try alice.node.openReceivedFile(sent.transfer.hex), "outgoing")
        _ = try bob.node.acceptFile(sent.transfer.hex)
        try link.exchange()
        let (record, fd, size) = try bob.node.openReceivedFile(String(sent.transfer.hex.prefix(8)))
        defer { close(fd) }
        XCTAssertEqual(record.transfer, sent.transfer)
        XCTAssertEqual(size, content.count)
        XCTAssertEqual(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY)
        var back = [UInt8](repeating: 0, count: size)
        XCTAssertEqual(back.withUnsafeMutableBytes { pread(fd, $0.baseAddress, size, 0) }, size)
        XCTAssertEqual(back, content)
        XCTAssertEqual(write(fd, "x", 1), -1, "read-only")
    }

    func testAPeerWithoutTheFilesFeatureIsNotSentAnOffer() throws {
        // The feature gate: an online peer that did not announce bit 1 makes files.send fail.
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        XCTAssertTrue(link.initiatorConnection.remoteFeatures.contains(.files))
    }

    /// A room offer is taken only from a joined member, as a room message is
    /// (`RoomDistribution.messageVerdict`): an invitee that has not joined sends no file
    /// into the room (an honest node cannot: `files.send` to a room needs a join).
    func testARoomOfferIsTakenOnlyFromAJoinedMember() throws {
        let invitee = IdentityKeyPair.generate().publicKey
        let root = RoomOperationHash(exactly: [UInt8](repeating: 9, count: 32))
        let room = RoomID.random()
        try alice.node.store.saveRoom(
            RoomRecord(
                id: room, root: root, name: "lab", creator: alice.identity, createdAt: 1, version: 3,
                members: [alice.identity, bob.identity, invitee], status: .joined,
                joined: [alice.identity, bob.identity], updatedAt: 1))
        XCTAssertTrue(try alice.node.roomAdmitsOffer(from: bob.identity, in: room))
        XCTAssertFalse(try alice.node.roomAdmitsOffer(from: invitee, in: room), "invited, not joined")
    }
}
