import ParleyCore
import ParleyNodeCore
import XCTest

/// The receiver's and the sender's transfer state machines, the accept policy and the
/// progress rate, with hostile inputs (docs/PROTOCOL.md "Files").
final class FileTransferTests: XCTestCase {
    private let chunkSize = 4_096

    /// A file of `count` full chunks plus a 100-byte tail, with its offer.
    private func file(chunks count: Int) -> (FileOffer, [[UInt8]], [[UInt8]]) {
        var chunks: [[UInt8]] = (0..<count).map { i in [UInt8](repeating: UInt8(i % 251), count: chunkSize) }
        chunks.append([UInt8](repeating: 0xEE, count: 100))
        let hashes = chunks.map { FileHash.of($0) }
        let offer = FileOffer(
            transfer: .random(), size: UInt64(count * chunkSize + 100), chunkSize: UInt32(chunkSize),
            contentHash: FileHash.listHash(hashes), listHash: FileHash.listHash(hashes), name: "f")
        return (offer, chunks, hashes)
    }

    private func writes(_ actions: [IncomingTransfer.Action]?) -> [UInt64] {
        (actions ?? []).compactMap { if case .write(let o, _) = $0 { return o } else { return nil } }
    }

    func testANewTransferAsksForTheListThenTakesChunksInOrderAndFinishes() {
        let (offer, chunks, hashes) = file(chunks: 2)
        var t = IncomingTransfer(offer: offer)
        XCTAssertEqual(t.start(), [.want(from: 0, needList: true)])
        XCTAssertEqual(t.receivedHashes(first: 0, hashes), [.keepHashList(hashes)])
        XCTAssertEqual(writes(t.receivedChunk(index: 0, data: chunks[0])), [0])
        XCTAssertEqual(writes(t.receivedChunk(index: 1, data: chunks[1])), [4_096])
        XCTAssertEqual(t.receivedChunk(index: 2, data: chunks[2]), [.write(offset: 8_192, data: chunks[2]), .finish])
        XCTAssertTrue(t.isOver)
        XCTAssertEqual(t.receivedChunk(index: 2, data: chunks[2]), [], "nothing after the end")
    }

    func testNoChunkIsTakenBeforeTheListIsVerified() {
        let (offer, chunks, _) = file(chunks: 2)
        var t = IncomingTransfer(offer: offer)
        _ = t.start()
        XCTAssertEqual(t.receivedChunk(index: 0, data: chunks[0]), [])
        XCTAssertEqual(t.nextIndex, 0)
    }

    func testAListThatDoesNotMatchTheOfferFailsTheTransfer() {
        let (offer, _, hashes) = file(chunks: 2)
        var t = IncomingTransfer(offer: offer)
        _ = t.start()
        var forged = hashes
        forged[1][0] ^= 1
        XCTAssertEqual(t.receivedHashes(first: 0, forged), [.fail("the sender's hash list does not match its offer")])
        var u = IncomingTransfer(offer: offer)
        _ = u.start()
        XCTAssertEqual(u.receivedHashes(first: 1, hashes), [.fail("the sender's hash list does not fit the offer")])
        var v = IncomingTransfer(offer: offer)
        _ = v.start()
        XCTAssertEqual(
            v.receivedHashes(first: 0, hashes + [hashes[0]]), [.fail("the sender's hash list does not fit the offer")],
            "more hashes than chunks")
    }

    func testAChunkOfTheWrongLengthOrPastTheEndIsAProtocolError() {
        let (offer, chunks, hashes) = file(chunks: 2)
        var t = IncomingTransfer(offer: offer)
        _ = t.start()
        _ = t.receivedHashes(first: 0, hashes)
        XCTAssertNil(t.receivedChunk(index: 0, data: chunks[0] + [0]), "bigger than offered")
        XCTAssertNil(t.receivedChunk(index: 2, data: chunks[1]), "a full chunk where the tail belongs")
        XCTAssertNil(t.receivedChunk(index: 3, data: chunks[2]), "past the end")
        XCTAssertNil(t.receivedChunk(index: .max, data: chunks[2]))
    }

    func testDuplicateAndOutOfOrderChunksAreDropped() {
        let (offer, chunks, hashes) = file(chunks: 3)
        var t = IncomingTransfer(offer: offer)
        _ = t.start()
        _ = t.receivedHashes(first: 0, hashes)
        XCTAssertEqual(t.receivedChunk(index: 1, data: chunks[1]), [], "ahead of the next expected")
        XCTAssertEqual(writes(t.receivedChunk(index: 0, data: chunks[0])), [0])
        XCTAssertEqual(t.receivedChunk(index: 0, data: chunks[0]), [], "a duplicate")
        XCTAssertEqual(t.nextIndex, 1)
    }

    func testACorruptedChunkIsAskedForAgainAndTheThirdFailsTheTransfer() {
        let (offer, chunks, hashes) = file(chunks: 3)
        var t = IncomingTransfer(offer: offer)
        _ = t.start()
        _ = t.receivedHashes(first: 0, hashes)
        _ = t.receivedChunk(index: 0, data: chunks[0])
        var bad = chunks[1]
        bad[10] ^= 0xFF
        XCTAssertEqual(t.receivedChunk(index: 1, data: bad), [.want(from: 1, needList: false)])
        XCTAssertEqual(t.nextIndex, 1, "nothing written")
        XCTAssertEqual(writes(t.receivedChunk(index: 1, data: chunks[1])), [4_096], "the re-fetched chunk is taken")
        XCTAssertEqual(t.receivedChunk(index: 2, data: bad), [.want(from: 2, needList: false)])
        XCTAssertEqual(t.receivedChunk(index: 2, data: bad), [.fail("the sender sent corrupted data")])
        XCTAssertTrue(t.isOver)
    }

    func testCheckpointsComeEverySixtyFourChunksAndResumeStartsAtTheDurableOne() {
        let (offer, chunks, hashes) = file(chunks: 100)
        var t = IncomingTransfer(offer: offer)
        _ = t.start()
        _ = t.receivedHashes(first: 0, hashes)
        var checkpoints: [UInt64] = []
        for i in 0..<70 {
            for a in t.receivedChunk(index: UInt64(i), data: chunks[i]) ?? [] {
                if case .checkpoint(let v) = a { checkpoints.append(v) }
            }
        }
        XCTAssertEqual(checkpoints, [64])
        // The driver crashes before confirming the checkpoint: the resume starts at 0.
        XCTAssertEqual(t.start(), [.want(from: 0, needList: false)])
        for i in 0..<64 { _ = t.receivedChunk(index: UInt64(i), data: chunks[i]) }
        t.checkpointed(64)
        XCTAssertEqual(t.start(), [.want(from: 64, needList: false)], "a new session resumes at the durable count")
        // After a restart: the stored count and list.
        var r = IncomingTransfer(offer: offer, durable: 64, verifiedHashes: hashes)
        XCTAssertEqual(r.start(), [.want(from: 64, needList: false)])
        XCTAssertEqual(r.receivedChunk(index: 63, data: chunks[63]), [], "below the resume point: dropped")
        XCTAssertEqual(writes(r.receivedChunk(index: 64, data: chunks[64])), [64 * 4_096])
    }

    func testAStoredListThatDoesNotMatchIsNotTrusted() {
        let (offer, _, hashes) = file(chunks: 2)
        var forged = hashes
        forged[0][0] ^= 1
        var t = IncomingTransfer(offer: offer, durable: 2, verifiedHashes: forged)
        XCTAssertFalse(t.listVerified)
        XCTAssertEqual(t.start(), [.want(from: 2, needList: true)])
    }

    func testAnEmptyFileFinishesAtOnce() {
        let offer = FileOffer(
            transfer: .random(), size: 0, chunkSize: 65_536, contentHash: FileHash.listHash([]),
            listHash: FileHash.listHash([]), name: "empty")
        var t = IncomingTransfer(offer: offer)
        XCTAssertEqual(t.start(), [.finish])
    }

    // MARK: The sender

    func testTheSenderWaitsForAWantAndStaysInItsWindow() throws {
        var s = OutgoingTransfer(chunkCount: 1_000)
        XCTAssertEqual(s.take(budget: 4), 0..<0, "nothing before the receiver's want")
        try s.want(from: 0, needList: true)
        XCTAssertTrue(s.listOwed)
        s.listSent()
        var sent: UInt64 = 0
        while s.canSend { sent += UInt64(s.take(budget: 4).count) }
        XCTAssertEqual(sent, FileLimits.window, "no further than the window beyond the receiver's count")
        s.have(64)
        XCTAssertEqual(s.take(budget: 100), 256..<320)
        s.have(10)
        XCTAssertEqual(s.confirmed, 64, "a count never goes back")
    }

    func testAWantRestartsFromItsPointAndAWantPastTheEndIsRefused() throws {
        var s = OutgoingTransfer(chunkCount: 10)
        try s.want(from: 0, needList: false)
        XCTAssertEqual(s.take(budget: 8), 0..<8)
        try s.want(from: 3, needList: false)
        XCTAssertEqual(s.take(budget: 4), 3..<7, "re-fetch from the corrupted chunk")
        XCTAssertThrowsError(try s.want(from: 11, needList: false)) {
            XCTAssertEqual($0 as? OutgoingTransfer.WantError, .fromOutOfRange(11))
        }
        try s.want(from: 10, needList: false)
        XCTAssertFalse(s.canSend, "everything is there already")
        s.sessionEnded()
        XCTAssertNil(s.next)
        XCTAssertEqual(s.take(budget: 4), 0..<0, "nothing sent on the next session before its want")
    }

    // MARK: Policy

    private let quota = ReceiveQuota(
        stranger: .init(messages: 10, bytes: 1_000), correspondent: .init(messages: 10, bytes: 100_000),
        total: .init(messages: 100, bytes: 150_000), diskFloorBytes: 10_000)

    private func decide(
        _ size: UInt64, verified: Bool = true, accepted: Bool = false, peer: Int = 0, total: Int = 0,
        free: Int? = 1_000_000
    ) -> FileAcceptPolicy.Verdict {
        FileAcceptPolicy(autoAcceptBytes: 5_000, quota: quota).decide(
            size: size, senderVerified: verified, standing: verified ? .correspondent : .stranger,
            userAccepted: accepted,
            peerUsage: .init(messages: 0, bytes: peer), totalUsage: .init(messages: 0, bytes: total),
            freeDiskBytes: free)
    }

    func testSmallFilesFromVerifiedPeersArriveOthersAsk() {
        XCTAssertEqual(decide(5_000), .accept)
        XCTAssertEqual(decide(5_001), .ask)
        XCTAssertEqual(decide(500, verified: false), .ask)
        XCTAssertEqual(decide(500, verified: false, accepted: true), .accept)
    }

    func testQuotasAndTheDiskFloorRefuseEvenWhatTheUserAccepted() {
        guard case .refuse = decide(2_000, verified: false, accepted: true) else { return XCTFail("unverified quota") }
        guard case .refuse = decide(60_000, accepted: true, peer: 50_000) else { return XCTFail("peer quota") }
        guard case .refuse = decide(60_000, accepted: true, total: 100_000) else { return XCTFail("total quota") }
        guard case .refuse = decide(3_000, accepted: true, free: 12_000) else { return XCTFail("disk floor") }
        guard case .refuse = decide(1 << 63, accepted: true) else { return XCTFail("2^63") }
        XCTAssertEqual(decide(3_000, free: nil), .accept, "free space unknown: the floor is not applied")
    }

    // MARK: Rate

    func testProgressIsThrottledAndTheRateMeasuredOnTheInjectedClock() {
        var r = TransferRate()
        XCTAssertFalse(r.due(bytes: 0, now: .zero))
        XCTAssertFalse(r.due(bytes: 1_000, now: .zero + .milliseconds(100)))
        XCTAssertTrue(r.due(bytes: 5_000_000, now: .zero + .milliseconds(500)))
        XCTAssertEqual(r.bytesPerSecond, 10_000_000)
        XCTAssertEqual(r.secondsLeft(remaining: 20_000_000), 2)
        XCTAssertFalse(r.due(bytes: 6_000_000, now: .zero + .milliseconds(900)))
    }
}
