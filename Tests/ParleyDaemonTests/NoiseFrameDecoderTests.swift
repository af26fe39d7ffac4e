import NIOCore
import NIOEmbedded
import ParleyCore
import SeededRandom
import XCTest

@testable import ParleyDaemon

/// The frame handler in front of every `PeerConnection`: each payload whole and in order,
/// however the stream is cut into reads; a frame that lies in one read passed on where it
/// lies (no copy); a zero length refused even when its header is split.
final class NoiseFrameDecoderTests: XCTestCase {
    /// Records what the decoder passes on.
    private final class Sink: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        var messages: [ByteBuffer] = []
        var errors: [Error] = []
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { messages.append(unwrapInboundIn(data)) }
        func errorCaught(context: ChannelHandlerContext, error: Error) { errors.append(error) }
    }

    private func channel() throws -> (EmbeddedChannel, Sink) {
        let sink = Sink()
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
        try channel.pipeline.syncOperations.addHandler(sink)
        return (channel, sink)
    }

    func testPayloadsComeOutWholeAndInOrderHoweverTheStreamIsCut() throws {
        var rng = SplitMix64(seed: 32)
        for round in 0..<40 {
            var payloads: [[UInt8]] = []
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 1...12, using: &rng) {
                // Mostly full-size frames (a file's), some tiny ones (chat, pings).
                let n = Bool.random(using: &rng) ? 65_535 : Int.random(in: 1...300, using: &rng)
                let p = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
                payloads.append(p)
                stream += try Frame.encode(p)
            }
            let (channel, sink) = try channel()
            var at = 0
            while at < stream.count {
                // Reads of 1 byte (a split header) up to more than a frame.
                let cut = [1, 2, 3, 1000, 65_536, 70_000, 200_000].randomElement(using: &rng)!
                let end = min(stream.count, at + Int.random(in: 1...cut, using: &rng))
                try channel.writeInbound(channel.allocator.buffer(bytes: stream[at..<end]))
                at = end
            }
            XCTAssertEqual(sink.messages.map { Array($0.readableBytesView) }, payloads, "round \(round)")
            XCTAssertTrue(sink.errors.isEmpty)
            _ = try channel.finish()
        }
    }

    func testAFrameWithinOneReadIsPassedOnWhereItLies() throws {
        let (channel, sink) = try channel()
        let payload = [UInt8](repeating: 0x5A, count: 40_000)
        let read = channel.allocator.buffer(bytes: try Frame.encode(payload) + Frame.encode([1, 2, 3]))
        let readStart = read.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        try channel.writeInbound(read)
        XCTAssertEqual(sink.messages.count, 2)
        let first = sink.messages[0].withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        let second = sink.messages[1].withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        XCTAssertEqual(first, readStart + 2, "the payload is a slice of the read, not a copy")
        XCTAssertEqual(second, readStart + 2 + 40_000 + 2)
        _ = try channel.finish()
    }

    /// After a frame split across two reads, the frames that lie whole in the second read are
    /// slices of it: only the split frame is copied (NIO's `ByteToMessageHandler` copied the
    /// whole second read into the buffer holding the first part).
    func testOnlyTheSplitFrameIsCopiedNotTheReadAfterIt() throws {
        let (channel, sink) = try channel()
        let split = try Frame.encode([UInt8](repeating: 1, count: 60_000))
        let whole = try Frame.encode([UInt8](repeating: 2, count: 50_000))
        try channel.writeInbound(channel.allocator.buffer(bytes: split[..<30_000]))
        XCTAssertTrue(sink.messages.isEmpty)
        let second = channel.allocator.buffer(bytes: split[30_000...] + whole)
        let secondStart = second.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        try channel.writeInbound(second)
        XCTAssertEqual(sink.messages.map { $0.readableBytes }, [60_000, 50_000])
        XCTAssertEqual(Array(sink.messages[0].readableBytesView), [UInt8](repeating: 1, count: 60_000))
        let wholeAt = sink.messages[1].withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) }
        XCTAssertEqual(wholeAt, secondStart + UInt(split.count - 30_000) + 2, "a slice of the second read")
        _ = try channel.finish()
    }

    func testAZeroLengthWhoseHeaderIsSplitIsRefusedAndNothingMoreIsRead() throws {
        let (channel, sink) = try channel()
        try channel.writeInbound(channel.allocator.buffer(bytes: try Frame.encode([7]) + [0x00]))
        try channel.writeInbound(channel.allocator.buffer(bytes: [0x00, 0x41]))
        try channel.writeInbound(channel.allocator.buffer(bytes: try Frame.encode([8])))
        XCTAssertEqual(sink.messages.map { Array($0.readableBytesView) }, [[7]])
        XCTAssertEqual(sink.errors.count, 1)
        XCTAssertEqual(sink.errors.first as? FrameError, .emptyFrame)
        _ = try? channel.finish()
    }
}
