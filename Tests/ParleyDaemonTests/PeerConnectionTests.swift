import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon

/// What a `PeerConnection` reported, in order.
private final class RecordingDelegate: PeerConnectionDelegate {
    var established = 0
    var chats: [[ChatRecord]] = []
    var acks: [MessageID] = []
    var closed: [Error?] = []
    /// Acknowledgements and room traffic as delivered: "ack" or "room", with how many.
    var ackAndRoomOrder: [String] = []

    func connectionEstablished(_ connection: PeerConnection) { established += 1 }
    func connection(_ connection: PeerConnection, received chats: [ChatRecord]) { self.chats.append(chats) }
    func connection(_ connection: PeerConnection, acknowledged ids: [MessageID]) {
        acks += ids
        ackAndRoomOrder.append("ack \(ids.count)")
    }
    func connection(_ connection: PeerConnection, receivedReadReceipts ids: [MessageID]) {}
    func connection(_ connection: PeerConnection, receivedCard card: [UInt8]) {}
    func connection(_ connection: PeerConnection, announcedListenPorts ports: [UInt16]) {}
    func connection(_ connection: PeerConnection, receivedRoomTraffic records: [RoomTraffic]) {
        ackAndRoomOrder.append("room \(records.count)")
    }
    func connection(_ connection: PeerConnection, refused ids: [MessageID], reason: RefusalReason) {}
    func connection(_ connection: PeerConnection, receivedActions actions: [MessageActionRecord]) {}
    func connection(_ connection: PeerConnection, receivedStatus status: PresenceStatus) {}
    func connection(_ connection: PeerConnection, receivedFile record: FileRecord) {}
    func connectionBecameWritable(_ connection: PeerConnection) {}
    func connectionClosed(_ connection: PeerConnection, error: Error?) { closed.append(error) }
}

/// One side of a connection: the production pipeline (frame decoder, then the peer
/// connection) in an `EmbeddedChannel` on the shared test loop.
private struct Side {
    let channel: EmbeddedChannel
    let connection: PeerConnection
    let delegate = RecordingDelegate()

    init(
        _ identity: TestIdentity, _ direction: ConnectionDirection, loop: EmbeddedEventLoop,
        handshakeTimeout: TimeAmount = .seconds(5)
    ) throws {
        connection = PeerConnection(direction: direction, handshakeTimeout: handshakeTimeout) {
            identity.handshake(direction == .outbound ? .initiator : .responder)
        }
        connection.delegate = delegate
        channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
        try channel.pipeline.syncOperations.addHandler(connection)
    }

    func activate() throws {
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7744)).wait()
    }

    /// Everything this side has written, as one byte string.
    func takeOutbound() throws -> [UInt8] {
        var bytes: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            bytes += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return bytes
    }
}

final class PeerConnectionTests: XCTestCase {
    private var loop: EmbeddedEventLoop!
    private var aliceIdentity: TestIdentity!
    private var bobIdentity: TestIdentity!
    private var alice: Side!  // dials
    private var bob: Side!  // accepts

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        aliceIdentity = try TestIdentity(name: "alice")
        bobIdentity = try TestIdentity(name: "bob")
        alice = try Side(aliceIdentity, .outbound, loop: loop)
        bob = try Side(bobIdentity, .inbound, loop: loop)
        try bob.activate()
        try alice.activate()
    }

    override func tearDownWithError() throws {
        _ = try? alice.channel.finish(acceptAlreadyClosed: true)
        _ = try? bob.channel.finish(acceptAlreadyClosed: true)
    }

    /// Moves bytes between the two sides until neither has anything to say; `transform`
    /// may cut or alter what `from` wrote before it is delivered as reads.
    private func shuttle(transform: ([UInt8]) -> [[UInt8]] = { [$0] }) throws {
        for _ in 0..<10 {
            loop.run()
            var moved = false
            for (from, to) in [(alice!, bob!), (bob!, alice!)] {
                let bytes = try from.takeOutbound()
                guard !bytes.isEmpty else { continue }
                moved = true
                guard to.channel.isActive else { continue }
                for read in transform(bytes) {
                    try to.channel.writeInbound(to.channel.allocator.buffer(bytes: read))
                }
            }
            if !moved { return }
        }
    }

    private func chat(_ n: Int) -> ChatRecord {
        ChatRecord(id: MessageID.random(), sequence: UInt64(n), createdAt: 1_700_000_000_000, body: "message \(n)")
    }

    func testHandshakeCompletesAndBothDelegatesSeeIt() throws {
        try shuttle()
        XCTAssertEqual(alice.delegate.established, 1)
        XCTAssertEqual(bob.delegate.established, 1)
        XCTAssertEqual(
            alice.connection.remoteIdentityKey?.hex, bobIdentity.identityHex, "each side proved the other's card")
        XCTAssertEqual(bob.connection.remoteIdentityKey?.hex, aliceIdentity.identityHex)
    }

    func testRecordsArriveInOrderBatchedPerRead() throws {
        try shuttle()
        let sent = (1...50).map(chat)
        for c in sent { alice.connection.send(.chat(c)) }
        let acks = (0..<3).map { _ in MessageID.random() }
        bob.connection.send(.ack(acks))
        try shuttle()
        XCTAssertEqual(bob.delegate.chats.flatMap { $0 }.map(\.body), sent.map(\.body))
        XCTAssertEqual(
            bob.delegate.chats.count, 1, "the records of one tick leave in one write and are reported per read")
        XCTAssertEqual(alice.delegate.acks, acks)
    }

    func testCloseRecordReachesTheOtherSideWithItsReason() throws {
        try shuttle()
        alice.connection.close(reason: .duplicate, text: "kept the other session")
        try shuttle()
        XCTAssertEqual(bob.connection.remoteCloseReason, .duplicate)
        XCTAssertFalse(bob.channel.isActive, "the receiver of a close record closes too")
        XCTAssertEqual(bob.delegate.closed.count, 1)
        XCTAssertEqual(alice.delegate.closed.count, 1)
    }

    func testTamperedFrameClosesTheConnection() throws {
        try shuttle()
        alice.connection.send(.chat(chat(1)))
        loop.run()
        var bytes = try alice.takeOutbound()
        bytes[bytes.count - 1] ^= 0x01  // in the AEAD tag
        try bob.channel.writeInbound(bob.channel.allocator.buffer(bytes: bytes))
        XCTAssertFalse(bob.channel.isActive)
        XCTAssertTrue(bob.delegate.chats.isEmpty, "nothing of a tampered message is delivered")
        XCTAssertEqual(bob.delegate.closed.count, 1)
        XCTAssertNotNil(bob.delegate.closed.first ?? nil, "the close carries the decryption failure")
    }

    func testAZeroLengthFrameClosesTheConnection() throws {
        try shuttle()
        try bob.channel.writeInbound(bob.channel.allocator.buffer(bytes: [0x00, 0x00, 0x41]))
        XCTAssertFalse(bob.channel.isActive)
        XCTAssertEqual(bob.delegate.closed.count, 1)
        XCTAssertEqual((bob.delegate.closed.first ?? nil) as? FrameError, .emptyFrame)
    }

    func testHandshakeTimeoutFiresWhenTimeIsAdvanced() throws {
        let lonely = try Side(try TestIdentity(name: "carol"), .inbound, loop: loop, handshakeTimeout: .seconds(5))
        try lonely.activate()
        loop.advanceTime(by: .milliseconds(4_999))
        XCTAssertTrue(lonely.channel.isActive)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertFalse(lonely.channel.isActive)
        XCTAssertEqual(lonely.delegate.established, 0)
        XCTAssertEqual((lonely.delegate.closed.first ?? nil) as? SessionHandshakeError, .timedOut)
    }

    func testHandshakeTimerIsCancelledOnceEstablished() throws {
        try shuttle()
        loop.advanceTime(by: .seconds(60))
        XCTAssertTrue(alice.channel.isActive)
        XCTAssertTrue(bob.channel.isActive)
        XCTAssertTrue(bob.delegate.closed.isEmpty)
    }

    func testFramesSplitAcrossReadsDecode() throws {
        // The handshake itself, one byte per read.
        try shuttle(transform: { $0.map { [$0] } })
        XCTAssertEqual(bob.delegate.established, 1)
        XCTAssertEqual(alice.delegate.established, 1)
        let sent = (1...5).map(chat)
        for c in sent { alice.connection.send(.chat(c)) }
        // Cut in uneven pieces, so headers and payloads split everywhere.
        try shuttle(transform: { bytes in
            stride(from: 0, to: bytes.count, by: 7).map { Array(bytes[$0..<min($0 + 7, bytes.count)]) }
        })
        XCTAssertEqual(bob.delegate.chats.flatMap { $0 }.map(\.body), sent.map(\.body))
    }

    func testFramesCoalescedInOneReadDecode() throws {
        try shuttle()
        // Three ticks give three Noise messages (three frames); they arrive in one read.
        var written: [UInt8] = []
        for n in 1...3 {
            alice.connection.send(.chat(chat(n)))
            loop.run()
            written += try alice.takeOutbound()
        }
        try bob.channel.writeInbound(bob.channel.allocator.buffer(bytes: written))
        XCTAssertEqual(
            bob.delegate.chats.map { $0.map(\.body) }, [["message 1", "message 2", "message 3"]],
            "three frames of one read are reported together")
    }

    func testAcknowledgementsAndRoomTrafficOfOneReadArriveInTheirOrder() throws {
        try shuttle()
        // One read: room record, ack, ack, room record, room record, ack. A member that
        // acknowledges an operation and then summarizes its graph without it lacks it
        // again: the node must see the ack first (the conformance suite's operation
        // summaries: the summary after the ack was answered without the acked operation).
        let room = RoomID(exactly: [UInt8](repeating: 0xab, count: 16))
        func roomChat(_ n: Int) -> AppRecord {
            .roomChat(
                RoomChatRecord(
                    id: MessageID.random(), roomID: room, sequence: UInt64(n), createdAt: 1_700_000_000_000,
                    body: "room \(n)"))
        }
        let order: [AppRecord] = [
            roomChat(1), .ack([MessageID.random()]), .ack([MessageID.random()]), roomChat(2), roomChat(3),
            .ack([MessageID.random()])
        ]
        for r in order { alice.connection.send(r) }
        loop.run()
        try bob.channel.writeInbound(bob.channel.allocator.buffer(bytes: try alice.takeOutbound()))
        XCTAssertEqual(
            bob.delegate.ackAndRoomOrder, ["room 1", "ack 2", "room 2", "ack 1"],
            "batched per read, in the order the peer sent them")
    }

    // MARK: Backpressure (issue 15)

    func testThePingsOfOneReadGetOnePong() throws {
        try shuttle()
        // A burst of 2,000 pings in one Noise message: answering each would make bob write
        // as much as the peer sends (a non-reading peer then grows bob's pending writes).
        for n in 1...2_000 { alice.connection.send(.ping(UInt64(n))) }
        loop.run()
        let burst = try alice.takeOutbound()
        XCTAssertGreaterThan(burst.count, 2_000 * 9)
        try bob.channel.writeInbound(bob.channel.allocator.buffer(bytes: burst))
        loop.run()
        let answer = try bob.takeOutbound()
        // One frame: header 2 + one pong record (type, length, 8 bytes) + the AEAD tag.
        XCTAssertLessThan(answer.count, 64, "one pong for the whole read, not one per ping")
        XCTAssertGreaterThan(answer.count, 0, "the burst is still answered")
        try alice.channel.writeInbound(alice.channel.allocator.buffer(bytes: answer))
        XCTAssertTrue(alice.channel.isActive, "the coalesced pong is a valid record")
    }

    func testReadingPausesWhileThePeerDoesNotTakeOurAnswersAndResumesAfter() throws {
        try shuttle()
        XCTAssertFalse(bob.connection.readingPaused)
        // Bob's pending writes are over the high water mark: the peer is not reading.
        bob.channel.isWritable = false
        alice.connection.send(.ping(1))
        loop.run()
        try bob.channel.writeInbound(bob.channel.allocator.buffer(bytes: try alice.takeOutbound()))
        loop.run()
        XCTAssertTrue(bob.connection.readingPaused, "no more reads while our answers pile up")
        XCTAssertEqual(autoRead(bob.channel), false)
        bob.channel.isWritable = true
        bob.channel.pipeline.fireChannelWritabilityChanged()
        XCTAssertFalse(bob.connection.readingPaused, "reading resumes once the peer took them")
        XCTAssertEqual(autoRead(bob.channel), true)
    }

    func testReadingGoesOnWhileThePeerTakesOurAnswers() throws {
        try shuttle()
        for n in 1...10 {
            alice.connection.send(.ping(UInt64(n)))
            try shuttle()
        }
        XCTAssertFalse(bob.connection.readingPaused)
        XCTAssertNil(autoRead(bob.channel), "autoRead was never switched off")
    }

    /// The last value of `autoRead` the handler set on the channel, if any.
    private func autoRead(_ channel: EmbeddedChannel) -> Bool? {
        channel.options.last { $0.option is ChannelOptions.Types.AutoReadOption }?.value as? Bool
    }
}
