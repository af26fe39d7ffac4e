import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The file driver in process, without a node: a real store on a temp file, the mock
/// clock of a virtual-time loop, a host that answers the room and quota questions as the
/// test says, and a link that records what the driver sends. A removed member and a store
/// that fails are the hostile parts: neither gets a file, and no failure is swallowed.
final class FileDriverFlowTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var directory: String!
    var store: Store!
    var seam: FailingFileTransferStore!
    var host: FakeFileHost!
    var link: RecordingFileLink!
    var driver: FileDriver!
    let log = CollectedLogLines()
    let room = RoomID.random()

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        directory = try makeTestDirectory("parley-fileflow")
        store = try Store(directory: directory)
        seam = FailingFileTransferStore(store)
        let peer = try TestIdentity(name: "bob").identity
        link = RecordingFileLink(peer: peer)
        host = FakeFileHost(loop: loop, directory: directory, link: link, log: log.logger())
        driver = newDriver()
    }

    override func tearDownWithError() throws {
        driver = nil
        host = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A driver with nothing in memory (as after a restart), on the same store and host.
    private func newDriver() -> FileDriver {
        let d = FileDriver(store: seam, clock: LoopClock(loop: loop))
        d.host = host
        return d
    }

    private var peer: IdentityPublicKey { link.peer }

    /// Offers a small file to the peer (a room file when `room` is given) through the driver.
    private func offer(room: RoomID? = nil) throws -> FileTransferRecord {
        let path = directory + "/minutes-\(UUID().uuidString).txt"
        try Data(repeating: 7, count: 10_000).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let copy = try driver.copies.copy(descriptor: fd, name: "minutes.txt")
        let future = try driver.send(
            [StagedOutgoingFile(copy: copy, name: "minutes.txt", mediaType: nil)], to: [peer], room: room,
            caption: nil)
        loop.run()
        return try XCTUnwrap(try future.wait().first)
    }

    private func stored(_ rec: FileTransferRecord) throws -> FileTransferRecord? {
        try store.transfer(peer: rec.peer, transfer: rec.transfer, direction: rec.direction)
    }

    private func failUpdates(of table: String = "file_transfer", on event: String = "UPDATE") throws {
        try store.write { db in
            try db.execute(
                sql: """
                    CREATE TEMP TRIGGER transfer_write_fails BEFORE \(event) ON \(table)
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
    }

    private func healUpdates() throws {
        try store.write { db in try db.execute(sql: "DROP TRIGGER transfer_write_fails") }
    }

    // MARK: The digest taken while copying

    /// A ten-byte offer whose hashes no chunk will match: for the tests about answering it.
    private func smallOffer(room: RoomID?) -> FileOffer {
        FileOffer(
            transfer: .random(), size: 10, chunkSize: 4096, contentHash: FileHash.of([UInt8](repeating: 1, count: 32)),
            listHash: FileHash.of([UInt8](repeating: 1, count: 32)), room: room, name: "x", mediaType: "text/plain",
            caption: "", thumbnail: [])
    }


    /// `files.send` hashes the copy while making it (`OutgoingCopies.copyAndDigest`): the
    /// offer uses that digest, with no second read of the file, but only while the copy is
    /// still the one hashed (same size and modification time); otherwise it hashes the copy.
    func testAStagedDigestIsOfferedOnlyWhileTheCopyIsTheOneHashed() throws {
        let path = directory + "/agenda.txt"
        try Data(repeating: 9, count: 70_000).write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let marker = [UInt8](repeating: 0xAB, count: FileHash.length)
        func sent(_ adjust: (inout SourceFile.Digest) -> Void) throws -> FileTransferRecord {
            var (copy, digest) = try driver.copies.copyAndDigest(descriptor: fd, name: "agenda.txt")
            let real = digest.contentHash
            XCTAssertNotEqual(real, marker)
            digest.listHash = marker
            adjust(&digest)
            let future = try driver.send(
                [StagedOutgoingFile(copy: copy, name: "agenda.txt", mediaType: nil, digest: digest)], to: [peer],
                room: nil, caption: nil)
            loop.run()
            return try XCTUnwrap(try future.wait().first)
        }
        XCTAssertEqual(try sent { _ in }.contentHash, marker, "the copy's own digest is offered as it was taken")
        let stale = try sent { $0.modified += 1 }
        XCTAssertNotEqual(stale.contentHash, marker, "a digest of another version of the copy is not used")
        XCTAssertEqual(
            stale.contentHash,
            FileHash.ofFile(size: 70_000, chunkSize: 65_536) { buffer, offset in
                buffer.initializeMemory(as: UInt8.self, repeating: 9)
                return min(buffer.count, 70_000 - Int(offset))
            }?.fileHash, "hashed from the copy instead")
    }

    // MARK: A removed member

    /// A room member removed before it answered the offer wants the file (in the same
    /// session: the next one would cancel the offer anyway): the old offer is no way in.
    /// It is told the transfer is cancelled, nothing of the file goes out, and the store
    /// records the end.
    func testAMemberRemovedAfterTheOfferIsNotServedTheRoomFile() throws {
        host.membership = .success(true)
        let sent = try offer(room: room)
        XCTAssertEqual(link.sent.count, 1, "offered while a member")
        host.membership = .success(false)
        link.sent.removeAll()

        driver.received(.want(sent.transfer, from: 0, needList: true), on: link)
        loop.run()
        XCTAssertEqual(link.sent, [.file(.end(sent.transfer, .cancelled, RoomFileAccess.notMemberReason))])
        XCTAssertTrue(link.chunks.isEmpty, "no chunk of a room file goes to a former member")
        XCTAssertEqual(try stored(sent)?.state, .cancelled)
    }

    /// A transfer the member accepted before its removal goes on (docs/PROTOCOL.md "Files
    /// in rooms": a removed member keeps what it accepted), also when it resumes.
    func testATransferAcceptedBeforeTheRemovalGoesOnAfterIt() throws {
        host.membership = .success(true)
        let sent = try offer(room: room)
        driver.received(.want(sent.transfer, from: 0, needList: true), on: link)
        loop.run()
        XCTAssertEqual(link.chunks, [0])
        host.membership = .success(false)
        driver = newDriver()  // a restart: the resume reads the store
        link.sent.removeAll()
        driver.received(.want(sent.transfer, from: 0, needList: false), on: link)
        loop.run()
        XCTAssertEqual(link.chunks, [0, 0], "resumed")
        XCTAssertEqual(try stored(sent)?.state, .transferring)
    }

    /// The same want from a member is served: the list, then the chunks.
    func testAMemberWhoWantsTheRoomFileIsServed() throws {
        host.membership = .success(true)
        let sent = try offer(room: room)
        link.sent.removeAll()
        driver.received(.want(sent.transfer, from: 0, needList: true), on: link)
        loop.run()
        XCTAssertEqual(link.chunks, [0])
        XCTAssertEqual(try stored(sent)?.state, .transferring)
    }

    /// When the store cannot say whether the peer is still in the room, the room file is
    /// neither offered again nor cancelled at the next session (a failed read is not
    /// "removed"); once the store answers, the offer goes out again.
    func testAMembershipTheStoreCannotTellNeitherOffersNorCancelsTheRoomFile() throws {
        host.membership = .success(true)
        host.linkUp = false
        let sent = try offer(room: room)
        host.linkUp = true
        host.membership = .failure(.io(path: "parley.sqlite", reason: "injected: rooms cannot be read"))
        driver = newDriver()
        driver.sessionStarted(link)
        XCTAssertEqual(link.sent, [], "neither the offer nor a cancellation")
        XCTAssertEqual(try stored(sent)?.state, .offered, "not cancelled on a failed read")
        XCTAssertTrue(log.lines.contains { $0.contains("could not read a room's members") }, "\(log.lines)")

        host.membership = .success(true)
        driver.sessionStarted(link)
        XCTAssertEqual(link.sent, [.file(.offer(try XCTUnwrap(sent.offer)))])
    }

    /// A want while the store cannot tell the membership is not served on a guess either:
    /// the session is closed, and the receiver asks again at the next one.
    func testAWantWhileTheMembershipCannotBeReadClosesTheSession() throws {
        host.membership = .success(true)
        let sent = try offer(room: room)
        link.sent.removeAll()
        host.membership = .failure(.io(path: "parley.sqlite", reason: "injected"))
        driver.received(.want(sent.transfer, from: 0, needList: true), on: link)
        loop.run()
        XCTAssertEqual(link.closed, FileDriver.storageFailureCloseText)
        XCTAssertTrue(link.chunks.isEmpty)
        XCTAssertEqual(try stored(sent)?.state, .offered)
    }

    /// An offer for a room the sender is not in (as this node resolved it) is refused.
    func testAnOfferForARoomTheSenderIsNotInIsRefused() throws {
        host.roomAdmits = false
        let offer = smallOffer(room: room)
        driver.received(.offer(offer), on: link)
        XCTAssertEqual(link.sent, [.file(.end(offer.transfer, .failed, FileOfferRefusal.notRoomMember))])
    }

    /// Fresh keys, one offer each with the largest thumbnail and caption: each waits for
    /// the person (a stranger's offer is never taken without asking), so without a bound
    /// over all senders the store grows with the keys minted. Past
    /// `maxWaitingOffersForStrangers` they are refused, answered `fileEnd`; the person's
    /// correspondent still gets an offer through.
    func testOffersFromManyFreshKeysStopAtTheBoundInAll() throws {
        host.standing = .stranger
        let bound = FileOfferRefusal.maxWaitingOffersForStrangers
        var lastLink: RecordingFileLink?
        for _ in 0..<(bound + 8) {
            let stranger = RecordingFileLink(peer: IdentityKeyPair.generate().publicKey)
            host.otherLinks.append(stranger)
            var offer = smallOffer(room: nil)
            offer.thumbnail = [UInt8](repeating: 0xFF, count: FileLimits.maxThumbnailBytes)
            offer.caption = String(repeating: "x", count: FileLimits.maxCaptionBytes)
            driver.received(.offer(offer), on: stranger)
            lastLink = stranger
        }
        loop.run()
        XCTAssertEqual(try store.waitingIncomingOfferCount(), bound, "the store stops growing with the keys")
        XCTAssertEqual(lastLink?.sent.count, 1)
        if case let .file(.end(_, .failed, reason))? = lastLink?.sent.first {
            XCTAssertEqual(reason, FileOfferRefusal.tooManyWaitingInAll)
        } else {
            XCTFail("the refused stranger is answered fileEnd failed, got \(String(describing: lastLink?.sent))")
        }
        host.standing = .correspondent
        driver.received(.offer(smallOffer(room: nil)), on: link)
        XCTAssertEqual(try store.waitingIncomingOfferCount(), bound + 1, "a correspondent's offer still waits")
    }

    // MARK: Store failures

    /// A peer's records about a transfer the store cannot read are not answered on a
    /// guess ("unknown transfer" would end it for good at the receiver) nor dropped
    /// silently (the transfer would stall): the session is closed, said in the log, and
    /// the transfer resumes at the next session.
    func testRecordsAboutATransferTheStoreCannotReadCloseTheSession() throws {
        let sent = try offer()
        for record in [
            FileRecord.want(sent.transfer, from: 0, needList: true), .hashes(sent.transfer, first: 0, hashes: []),
            .chunk(sent.transfer, index: 0, data: [1]), .end(sent.transfer, .cancelled, "")
        ] {
            driver = newDriver()
            link.sent.removeAll()
            link.closed = nil
            seam.failTransferReads = true
            driver.received(record, on: link)
            XCTAssertEqual(link.closed, FileDriver.storageFailureCloseText, "\(record)")
            XCTAssertEqual(link.sent, [], "\(record): nothing said on a failed read")
            seam.failTransferReads = false
        }
        XCTAssertEqual(try stored(sent)?.state, .offered, "nothing ended on a failed read")
        XCTAssertTrue(log.lines.contains { $0.contains("could not read a file transfer") }, "\(log.lines)")

        driver = newDriver()
        link.closed = nil  // the next session
        driver.received(.want(sent.transfer, from: 0, needList: true), on: link)
        loop.run()
        XCTAssertEqual(link.chunks, [0], "served once the store reads again")
    }

    /// An outgoing transfer's end the store cannot record is logged, and the daemon's copy
    /// of the file is kept: the store still says offered, so the next session offers it
    /// again, the receiver answers with its end, and that end is recorded. Nothing lost.
    func testAnOutgoingEndTheStoreCannotRecordIsLoggedAndRecordedAtTheNextSession() throws {
        let sent = try offer()
        let copy = try XCTUnwrap(sent.sourcePath)
        try failUpdates()
        driver.received(.end(sent.transfer, .rejected, ""), on: link)
        XCTAssertTrue(
            log.lines.contains { $0.contains("could not record an outgoing transfer's progress") }, "\(log.lines)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: copy), "the copy stays while the store says open")
        XCTAssertEqual(try stored(sent)?.state, .offered)

        try healUpdates()
        driver = newDriver()
        link.sent.removeAll()
        driver.sessionStarted(link)
        XCTAssertEqual(link.sent, [.file(.offer(try XCTUnwrap(sent.offer)))], "offered again")
        driver.received(.end(sent.transfer, .rejected, ""), on: link)
        XCTAssertEqual(try stored(sent)?.state, .rejected)
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy), "removed once the end is recorded")
    }

    /// A transfer's start and a confirmed count the store cannot record are logged; the
    /// file is still served (the stored state only lags: a resume starts earlier).
    func testAStartAndACountTheStoreCannotRecordAreLoggedAndTheFileStillGoes() throws {
        let sent = try offer()
        try failUpdates()
        driver.received(.want(sent.transfer, from: 0, needList: true), on: link)
        loop.run()
        XCTAssertEqual(link.chunks, [0])
        driver.received(.have(sent.transfer, verified: 1), on: link)
        let failures = log.lines.filter { $0.contains("could not record an outgoing transfer's progress") }
        XCTAssertTrue(failures.contains { $0.contains("its start") }, "\(log.lines)")
        XCTAssertTrue(failures.contains { $0.contains("a confirmed count") }, "\(log.lines)")
    }

    /// The user cancels an offer while the store cannot record it. The cancel is not
    /// reported done: the store would still say offered, the daemon's copy is kept (an
    /// outgoing end not recorded keeps it, above), so the next session would offer the file
    /// again and deliver what the user cancelled. Nothing is told to the peer; once the
    /// store records again, the cancel goes through: recorded, told, the copy removed.
    func testACancelTheStoreCannotRecordIsNotReportedDone() throws {
        let sent = try offer()
        let copy = try XCTUnwrap(sent.sourcePath)
        link.sent.removeAll()
        try failUpdates()
        XCTAssertThrowsError(try driver.cancel(sent.transfer.hex)) { error in
            guard case FileError.storage = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(link.sent, [], "the peer is not told of a cancel that did not happen")
        XCTAssertEqual(try stored(sent)?.state, .offered)
        XCTAssertFalse(
            host.events.contains { if case .file(_, .cancelled, _) = $0 { true } else { false } },
            "no cancelled event for a cancel that did not happen")

        try healUpdates()
        XCTAssertEqual(try driver.cancel(sent.transfer.hex).state, .cancelled)
        XCTAssertEqual(link.sent, [.file(.end(sent.transfer, .cancelled, ""))])
        XCTAssertEqual(try stored(sent)?.state, .cancelled)
        XCTAssertFalse(FileManager.default.fileExists(atPath: copy), "removed once the cancel is recorded")
        driver = newDriver()
        link.sent.removeAll()
        driver.sessionStarted(link)
        XCTAssertEqual(link.sent, [], "a cancelled file is not offered again")
    }

    /// The same for an incoming transfer the user accepted, then cancels or rejects while
    /// the store cannot record it: not reported done (the next session would resume the
    /// download the user stopped), the sender is not told, the partial state stays.
    func testAnIncomingCancelOrRejectTheStoreCannotRecordIsNotReportedDone() throws {
        let offer = smallOffer(room: nil)
        driver.received(.offer(offer), on: link)
        let key = (peer, offer.transfer)
        XCTAssertEqual(try store.transfer(peer: key.0, transfer: key.1, direction: .incoming)?.state, .offered)
        XCTAssertEqual(try driver.accept(offer.transfer.hex).state, .transferring)
        link.sent.removeAll()
        try failUpdates()
        for answer in [driver.cancel, driver.reject] {
            XCTAssertThrowsError(try answer(offer.transfer.hex)) { error in
                guard case FileError.storage = error else { return XCTFail("\(error)") }
            }
            XCTAssertEqual(link.sent, [], "the sender is not told of an end that did not happen")
            XCTAssertEqual(
                try store.transfer(peer: key.0, transfer: key.1, direction: .incoming)?.state, .transferring)
        }
        try healUpdates()
        XCTAssertEqual(try driver.reject(offer.transfer.hex).state, .rejected)
        XCTAssertEqual(link.sent, [.file(.end(offer.transfer, .rejected, ""))])
        XCTAssertEqual(try store.transfer(peer: key.0, transfer: key.1, direction: .incoming)?.state, .rejected)
    }

    /// The user accepts an offer that the disk floor refuses while the store cannot record
    /// the refusal: the accept is not reported `failed` (the store still says offered, so
    /// the offer would come back while the sender was told it ended); it fails with the
    /// storage error, the sender is not told and no event says failed. Once the store
    /// records again, the same accept is refused, recorded, and the sender told.
    func testAnAcceptRefusedByTheQuotaThatTheStoreCannotRecordIsNotReportedFailed() throws {
        let offer = smallOffer(room: nil)
        driver.received(.offer(offer), on: link)
        let key = (peer, offer.transfer)
        XCTAssertEqual(try store.transfer(peer: key.0, transfer: key.1, direction: .incoming)?.state, .offered)
        link.sent.removeAll()
        host.events.removeAll()
        host.freeDisk = 0
        try failUpdates()
        XCTAssertThrowsError(try driver.accept(offer.transfer.hex)) { error in
            guard case FileError.storage = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(link.sent, [], "the sender is not told of a refusal that was not recorded")
        XCTAssertEqual(try store.transfer(peer: key.0, transfer: key.1, direction: .incoming)?.state, .offered)
        XCTAssertFalse(
            host.events.contains { if case .file(_, .failed, _) = $0 { true } else { false } },
            "no failed event for a refusal that was not recorded")
        XCTAssertTrue(log.lines.contains { $0.contains("a refused accept") }, "\(log.lines)")

        try healUpdates()
        let refused = try driver.accept(offer.transfer.hex)
        XCTAssertEqual(refused.state, .failed)
        let reason = try XCTUnwrap(refused.error)
        XCTAssertEqual(link.sent, [.file(.end(offer.transfer, .failed, reason))])
        XCTAssertEqual(try store.transfer(peer: key.0, transfer: key.1, direction: .incoming)?.state, .failed)
    }

    /// An offer the store cannot keep is refused to the sender with the reason (it can
    /// offer again), never dropped with the sender left waiting.
    func testAnOfferTheStoreCannotKeepIsRefusedToTheSender() throws {
        try failUpdates(on: "INSERT")
        let offer = smallOffer(room: nil)
        driver.received(.offer(offer), on: link)
        XCTAssertEqual(link.sent, [.file(.end(offer.transfer, .failed, FileDriver.offerStoreFailureReason))])
        XCTAssertTrue(log.lines.contains { $0.contains("could not store a file offer") }, "\(log.lines)")
    }
}

/// What the file driver sent on one session, and whether it closed it.
final class RecordingFileLink: FileLink {
    let peer: IdentityPublicKey
    var sent: [AppRecord] = []
    var chunks: [UInt64] = []
    var closed: String?
    init(peer: IdentityPublicKey) { self.peer = peer }

    var isWritable: Bool { closed == nil }
    var remoteFeatures: ProtocolFeatures { .supported }
    var remoteIdentityKey: IdentityPublicKey? { peer }
    func send(_ record: AppRecord) { sent.append(record) }
    func close(reason: CloseReason, text: String) { closed = text }
    func sendFileChunk<E: Error>(
        _ transfer: TransferID, index: UInt64, length: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: length, alignment: 1)
        defer { buffer.deallocate() }
        try fill(buffer)
        chunks.append(index)
    }
}

/// The node's side of the file driver, as a test sets it.
final class FakeFileHost: FileHost {
    let loop: EventLoop
    let log: Logger
    let directory: String
    let link: RecordingFileLink
    var linkUp = true
    var membership: Result<Bool, StoreError> = .success(true)
    var roomAdmits = true
    var events: [NodeEvent] = []

    init(loop: EventLoop, directory: String, link: RecordingFileLink, log: Logger) {
        self.loop = loop
        self.directory = directory
        self.link = link
        self.log = log
    }

    /// Sessions of further peers (fresh keys a test mints).
    var otherLinks: [RecordingFileLink] = []
    /// What every sender is to the receive quota.
    var standing: ReceiveQuota.Standing = .correspondent

    func filePeer(of link: any FileLink) -> IdentityPublicKey? {
        if let other = otherLinks.first(where: { $0 === link }) { return other.peer }
        return linkUp && link === self.link ? self.link.peer : nil
    }
    func fileLink(for peer: IdentityPublicKey) -> (any FileLink)? {
        linkUp && peer == link.peer ? link : nil
    }
    func roomMembership(of peer: IdentityPublicKey, in room: RoomID) throws(StoreError) -> Bool {
        try membership.get()
    }
    func roomAdmitsOffer(from peer: IdentityPublicKey, in room: RoomID) throws(StoreError) -> Bool { roomAdmits }
    var fileAcceptPolicy: FileAcceptPolicy { FileAcceptPolicy() }
    func senderVerified(_ peer: IdentityPublicKey) -> Bool { false }
    func quotaStanding(of sender: IdentityPublicKey) -> ReceiveQuota.Standing { standing }
    func receiveUsage(of peer: IdentityPublicKey) throws(StoreError)
        -> (peer: ReceiveQuota.Usage, total: ReceiveQuota.Usage)
    {
        (ReceiveQuota.Usage(messages: 0, bytes: 0), ReceiveQuota.Usage(messages: 0, bytes: 0))
    }
    /// Free bytes on the download directory's file system (nil: unknown, no floor applied).
    var freeDisk: Int?
    func freeBytes(at directory: String) -> Int? { freeDisk }
    var downloadDirectory: String { directory + "/files" }
    var fileStateDirectory: String? { directory }
    var fileSettings: FileDriver.Settings { FileDriver.Settings(inlineDigestBytes: 64 << 20, diskWorkInline: true) }
    func makeThumbnail(path: String, mediaType: String, size: UInt64) -> EventLoopFuture<[UInt8]> {
        loop.makeSucceededFuture([])
    }
    func emit(_ e: NodeEvent) { events.append(e) }
}

/// The real store behind the `FileTransferStore` seam, except that reading one transfer
/// fails while `failTransferReads` is set (a damaged page, an I/O error).
final class FailingFileTransferStore: ForwardingFileTransferStore {
    let inner: Store
    var failTransferReads = false
    init(_ inner: Store) { self.inner = inner }

    func transfer(peer: IdentityPublicKey, transfer: TransferID, direction: FileTransferRecord.Direction)
        throws(StoreError) -> FileTransferRecord?
    {
        if failTransferReads { throw .io(path: inner.path, reason: "injected: the transfer cannot be read") }
        return try inner.transfer(peer: peer, transfer: transfer, direction: direction)
    }
}
