import ParleyCore
import SeededRandom
import XCTest

final class RecordStreamTests: XCTestCase {
    func drainAll(_ decoder: inout RecordStreamDecoder) throws -> [AppRecord] {
        var out: [AppRecord] = []
        while let r = try decoder.next() { out.append(r) }
        return out
    }

    func randomRecord(_ rng: inout SplitMix64) -> AppRecord {
        // 16 random bytes: always a valid message id.
        func id() -> MessageID { MessageID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) })! }
        switch Int.random(in: 0..<7, using: &rng) {
        case 0:
            let scalars = ["a", "Z", " ", "é", "张", "🦊", "\n"]
            let length =
                Bool.random(using: &rng) ? Int.random(in: 0..<40, using: &rng) : Int.random(in: 0..<10_000, using: &rng)
            let body = (0..<length).map { _ in scalars.randomElement(using: &rng)! }.joined()  // non-empty array
            return .chat(ChatRecord(id: id(), sequence: rng.next(), createdAt: rng.next(), body: body))
        case 1: return .ack((0..<Int.random(in: 0...20, using: &rng)).map { _ in id() })
        case 2:
            return .cardUpdate(
                (0..<Int.random(in: 0...500, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 3: return .ping(rng.next())
        case 4: return .pong(rng.next())
        case 5: return .close(.protocolError, "reason \(rng.next())")
        default: return .ack([])
        }
    }

    // MARK: - Encoder

    func testManySmallRecordsShareOneChunk() throws {
        var encoder = RecordStreamEncoder()
        let records = (0..<100).map { AppRecord.ping(UInt64($0)) }
        for r in records { encoder.append(r) }
        XCTAssertEqual(encoder.pendingByteCount, 100 * 13)
        let chunks = encoder.drainChunks()
        XCTAssertEqual(chunks.count, 1)
        XCTAssertEqual(chunks[0].count, 100 * 13)
        XCTAssertEqual(encoder.pendingByteCount, 0)
        XCTAssertEqual(encoder.drainChunks(), [], "nothing pending: no (empty) chunk")

        var decoder = RecordStreamDecoder()
        decoder.append(chunks[0])
        XCTAssertEqual(try drainAll(&decoder), records)
    }

    func testOneLargeRecordSpansSeveralChunksAndReassembles() throws {
        let body = String(repeating: "b", count: WireLimits.maxBodyBytes)
        let chat = AppRecord.chat(ChatRecord(id: .random(), sequence: 1, createdAt: 2, body: body))
        // The largest record a peer accepts: needs three chunks.
        let card = AppRecord.cardUpdate(
            [UInt8](repeating: 0x5a, count: WireLimits.maxRecordBytes - AppRecord.headerLength))
        for (record, expectedChunks) in [(chat, 2), (card, 3)] {
            var encoder = RecordStreamEncoder()
            encoder.append(record)
            let total = encoder.pendingByteCount
            let chunks = encoder.drainChunks()
            XCTAssertEqual(chunks.count, expectedChunks)
            XCTAssertTrue(chunks.dropLast().allSatisfy { $0.count == WireLimits.maxPlaintextPerMessage })
            XCTAssertEqual(chunks.map(\.count).reduce(0, +), total)
            XCTAssertEqual(chunks.joined().map { $0 }, record.encoded())

            var decoder = RecordStreamDecoder()
            for chunk in chunks.dropLast() {
                decoder.append(chunk)
                XCTAssertNil(try decoder.next(), "incomplete record must wait")
            }
            decoder.append(chunks.last!)  // expectedChunks >= 2
            XCTAssertEqual(try decoder.next(), record)
            XCTAssertNil(try decoder.next())
            XCTAssertEqual(decoder.bufferedByteCount, 0)
        }
    }

    func testChunksTravelThroughARealSession() throws {
        // Every chunk the encoder makes fits one Noise transport message.
        var (sender, receiver) = try transportPair()

        var encoder = RecordStreamEncoder()
        let records: [AppRecord] = [
            .ping(1),
            .cardUpdate([UInt8](repeating: 1, count: WireLimits.maxRecordBytes - AppRecord.headerLength)),
            .chat(ChatRecord(id: .random(), sequence: 9, createdAt: 9, body: "after the big one"))
        ]
        for rec in records { encoder.append(rec) }
        var decoder = RecordStreamDecoder()
        var got: [AppRecord] = []
        for chunk in encoder.drainChunks() {
            let message = try sender.seal(chunk)
            XCTAssertLessThanOrEqual(message.count, NoiseConstants.maxMessageLength)
            decoder.append(try receiver.open(message))
            got += try drainAll(&decoder)
        }
        XCTAssertEqual(got, records)
    }

    // MARK: - Decoder limits

    func testOversizeHeaderThrowsBeforeThePayloadArrives() throws {
        for announced in [UInt32(WireLimits.maxRecordBytes - AppRecord.headerLength + 1), UInt32.max] {
            var decoder = RecordStreamDecoder()
            decoder.append([
                0x01, UInt8(announced >> 24), UInt8((announced >> 16) & 0xff),
                UInt8((announced >> 8) & 0xff), UInt8(announced & 0xff)
            ])
            XCTAssertThrowsError(try decoder.next()) {
                XCTAssertEqual($0 as? AppRecordError, .recordTooLarge(Int(announced) + AppRecord.headerLength))
            }
            XCTAssertEqual(decoder.bufferedByteCount, AppRecord.headerLength)
        }
        // The largest allowed length is accepted and waited for.
        let max = UInt32(WireLimits.maxRecordBytes - AppRecord.headerLength)
        var decoder = RecordStreamDecoder()
        decoder.append([0x03, UInt8(max >> 24), UInt8((max >> 16) & 0xff), UInt8((max >> 8) & 0xff), UInt8(max & 0xff)])
        XCTAssertNil(try decoder.next())
    }

    func testPartialHeaderWaits() throws {
        let bytes = AppRecord.ping(77).encoded()
        var decoder = RecordStreamDecoder()
        for b in bytes.dropLast() {
            decoder.append([b])
            XCTAssertNil(try decoder.next())
        }
        decoder.append([bytes.last!])  // non-empty
        XCTAssertEqual(try decoder.next(), .ping(77))
    }

    func testRandomChunkBoundariesReassembleExactly() throws {
        for seed in UInt64(1)...20 {
            var rng = SplitMix64(seed: seed)
            let records = (0..<60).map { _ in randomRecord(&rng) }
            var stream: [UInt8] = []
            for r in records { r.encode(into: &stream) }

            var decoder = RecordStreamDecoder()
            var got: [AppRecord] = []
            var offset = 0
            while offset < stream.count {
                let size =
                    Bool.random(using: &rng)
                    ? Int.random(in: 1...16, using: &rng)
                    : Int.random(in: 1...WireLimits.maxPlaintextPerMessage, using: &rng)
                let end = min(offset + size, stream.count)
                decoder.append(Array(stream[offset..<end]))
                offset = end
                got += try drainAll(&decoder)
                // Never more than one record's worth plus one chunk held.
                XCTAssertLessThanOrEqual(
                    decoder.bufferedByteCount, WireLimits.maxRecordBytes + WireLimits.maxPlaintextPerMessage)
            }
            XCTAssertEqual(got, records, "seed \(seed)")
            XCTAssertEqual(decoder.bufferedByteCount, 0)
        }
    }

    func testEncoderChunksOfRandomRecordsReassemble() throws {
        var rng = SplitMix64(seed: 99)
        var encoder = RecordStreamEncoder()
        var decoder = RecordStreamDecoder()
        var sent: [AppRecord] = []
        var got: [AppRecord] = []
        for _ in 0..<30 {
            for _ in 0..<Int.random(in: 1...20, using: &rng) {
                let r = randomRecord(&rng)
                sent.append(r)
                encoder.append(r)
            }
            for chunk in encoder.drainChunks() {
                XCTAssertLessThanOrEqual(chunk.count, WireLimits.maxPlaintextPerMessage)
                XCTAssertFalse(chunk.isEmpty)
                decoder.append(chunk)
                got += try drainAll(&decoder)
            }
        }
        XCTAssertEqual(got, sent)
    }

    func testRandomBytesNeverCrash() {
        var rng = SplitMix64(seed: 7)
        var valid: [UInt8] = []
        for _ in 0..<40 { randomRecord(&rng).encode(into: &valid) }
        var errors = 0
        var records = 0
        for round in 0..<3_000 {
            var input: [UInt8]
            if round % 2 == 0 {
                // Pure noise, small type codes and lengths made likely so bodies get parsed.
                input = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                var k = 0
                while k + 5 <= input.count {
                    input[k] = UInt8.random(in: 0...7, using: &rng)
                    input[k + 1] = 0
                    input[k + 2] = 0
                    input[k + 3] = 0
                    input[k + 4] = UInt8.random(in: 0...60, using: &rng)
                    k += 5 + Int(input[k + 4])
                }
            } else {
                // A valid stream with a few bytes flipped.
                input = valid
                for _ in 0..<Int.random(in: 1...4, using: &rng) {
                    input[Int.random(in: 0..<input.count, using: &rng)] ^= UInt8.random(in: 1...255, using: &rng)
                }
            }
            var decoder = RecordStreamDecoder()
            var offset = 0
            feeding: while offset < input.count {
                let end = min(input.count, offset + Int.random(in: 1...512, using: &rng))
                decoder.append(Array(input[offset..<end]))
                offset = end
                while true {
                    do {
                        guard try decoder.next() != nil else { break }
                        records += 1
                    } catch {
                        errors += 1
                        // recordTooLarge is sticky (the stream is out of step); others skip the record.
                        if case .recordTooLarge = error { break feeding }
                    }
                }
            }
        }
        // The loop exercised both outcomes, so it was not vacuous.
        XCTAssertGreaterThan(errors, 100)
        XCTAssertGreaterThan(records, 100)
    }
}
