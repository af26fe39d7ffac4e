import ParleyCore
import SeededRandom
import XCTest

final class FrameDecoderTests: XCTestCase {
    /// Payloads of awkward sizes, including both limits, with recognisable content.
    func samplePayloads() -> [[UInt8]] {
        [1, 2, 3, 255, 256, 257, 1000, 65534, 65535, 1, 17].enumerated().map { index, length in
            (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ index) }
        }
    }

    func drain(_ decoder: inout FrameDecoder) throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        while let frame = try decoder.next() { out.append(frame) }
        return out
    }

    func testEncodeHeader() throws {
        XCTAssertEqual(try Frame.encode([0xAA]), [0x00, 0x01, 0xAA])
        XCTAssertEqual(Array(try Frame.encode(Array(repeating: 7, count: 258)).prefix(2)), [0x01, 0x02])
        let max = try Frame.encode(Array(repeating: 1, count: Frame.maxPayloadLength))
        XCTAssertEqual(Array(max.prefix(2)), [0xFF, 0xFF])
        XCTAssertEqual(max.count, Frame.headerLength + Frame.maxPayloadLength)
    }

    func testEncodeRejectsEmptyAndOversize() {
        XCTAssertThrowsError(try Frame.encode([])) { XCTAssertEqual($0 as? FrameError, .emptyFrame) }
        XCTAssertThrowsError(try Frame.encode(Array(repeating: 0, count: 65536))) {
            XCTAssertEqual($0 as? FrameError, .payloadTooLarge(length: 65536))
        }
    }

    func testDocumentedFrameExample() throws {
        let example = try XCTUnwrap(Sodium.fromHex(try ProtocolDoc.hexExample("frame")))
        var decoder = FrameDecoder()
        decoder.append(example)
        XCTAssertEqual(try drain(&decoder), [[0x68, 0x69], [0x21]])
        XCTAssertEqual(try Frame.encode([0x68, 0x69]) + Frame.encode([0x21]), example)
    }

    func testWholeStreamAtOnce() throws {
        let payloads = samplePayloads()
        var decoder = FrameDecoder()
        decoder.append(try payloads.flatMap { try Frame.encode($0) })
        XCTAssertEqual(try drain(&decoder), payloads)
        XCTAssertEqual(decoder.bufferedByteCount, 0)
    }

    func testByteByByte() throws {
        let payloads = samplePayloads()
        let stream = try payloads.flatMap { try Frame.encode($0) }
        var decoder = FrameDecoder()
        var received: [[UInt8]] = []
        for byte in stream {
            decoder.append(CollectionOfOne(byte))
            received += try drain(&decoder)
            XCTAssertLessThanOrEqual(decoder.bufferedByteCount, Frame.headerLength + Frame.maxPayloadLength - 1)
        }
        XCTAssertEqual(received, payloads)
        XCTAssertEqual(decoder.bufferedByteCount, 0)
    }

    func testRandomChunkSizes() throws {
        let payloads = samplePayloads()
        let stream = try payloads.flatMap { try Frame.encode($0) }
        for seed in UInt64(1)...40 {
            var rng = SplitMix64(seed: seed)
            var decoder = FrameDecoder()
            var received: [[UInt8]] = []
            var offset = 0
            while offset < stream.count {
                // Mostly small chunks, sometimes large ones, so frames split everywhere.
                let limit = Bool.random(using: &rng) ? 16 : 70_000
                let size = min(Int.random(in: 1...limit, using: &rng), stream.count - offset)
                decoder.append(stream[offset..<(offset + size)])
                offset += size
                received += try drain(&decoder)
                XCTAssertLessThanOrEqual(decoder.bufferedByteCount, Frame.headerLength + Frame.maxPayloadLength - 1)
            }
            XCTAssertEqual(received, payloads, "seed \(seed)")
            XCTAssertEqual(decoder.bufferedByteCount, 0)
        }
    }

    func testZeroLengthFrameIsAnErrorAndSticky() throws {
        var decoder = FrameDecoder()
        decoder.append(try Frame.encode([1, 2, 3]) + [0x00, 0x00] + Frame.encode([4]))
        XCTAssertEqual(try decoder.next(), [1, 2, 3])
        XCTAssertThrowsError(try decoder.next()) { XCTAssertEqual($0 as? FrameError, .emptyFrame) }
        // The stream is out of step now: a later valid-looking frame is not returned.
        XCTAssertThrowsError(try decoder.next()) { XCTAssertEqual($0 as? FrameError, .emptyFrame) }
    }

    func testLargeHeaderDoesNotProduceAFrameEarly() throws {
        var decoder = FrameDecoder()
        decoder.append([0xFF, 0xFF, 0x01])
        XCTAssertNil(try decoder.next())
        XCTAssertEqual(decoder.bufferedByteCount, 3, "only the bytes that arrived are buffered")
        decoder.append(Array(repeating: 0x02, count: Frame.maxPayloadLength - 2))
        XCTAssertNil(try decoder.next())
        XCTAssertEqual(decoder.bufferedByteCount, Frame.headerLength + Frame.maxPayloadLength - 1)
        decoder.append([0x03])
        let frame = try XCTUnwrap(try decoder.next())
        XCTAssertEqual(frame.count, Frame.maxPayloadLength)
        XCTAssertEqual(frame.first, 0x01)
        XCTAssertEqual(frame.last, 0x03)
        XCTAssertNil(try decoder.next())
    }

    func testHalfHeaderWaits() throws {
        var decoder = FrameDecoder()
        decoder.append([0x00])
        XCTAssertNil(try decoder.next())
        decoder.append([0x00])
        XCTAssertThrowsError(try decoder.next()) { XCTAssertEqual($0 as? FrameError, .emptyFrame) }
    }

    /// `scan` is the rule the daemon's NIO handler applies to its receive buffer.
    func scan(_ bytes: [UInt8]) -> FrameDecoder.Scan {
        bytes.withUnsafeBytes(FrameDecoder.scan)
    }

    func testScanFindsTheFirstFrameOnly() throws {
        let stream = try Frame.encode([0x68, 0x69]) + Frame.encode([0x21])
        XCTAssertEqual(scan(stream), .frame(payload: 2..<4))
        XCTAssertEqual(scan(Array(stream[4...])), .frame(payload: 2..<3))
    }

    func testScanWaitsForTheHeaderAndTheWholePayload() {
        XCTAssertEqual(scan([]), .needMoreBytes)
        XCTAssertEqual(scan([0x00]), .needMoreBytes)
        XCTAssertEqual(scan([0x00, 0x03, 0x01, 0x02]), .needMoreBytes)
        XCTAssertEqual(scan([0xFF, 0xFF] + Array(repeating: 0, count: Frame.maxPayloadLength - 1)), .needMoreBytes)
        XCTAssertEqual(
            scan([0xFF, 0xFF] + Array(repeating: 0, count: Frame.maxPayloadLength)),
            .frame(payload: 2..<(2 + Frame.maxPayloadLength)))
    }

    func testScanRejectsAZeroLength() {
        XCTAssertEqual(scan([0x00, 0x00]), .invalid(.emptyFrame))
        XCTAssertEqual(scan([0x00, 0x00, 0x41]), .invalid(.emptyFrame))
    }

    func testProtocolVersionPrologue() {
        XCTAssertEqual(
            String(decoding: ProtocolVersion.prologue, as: UTF8.self),
            "parley/1 Noise_XX_25519_ChaChaPoly_SHA256")
    }
}
