import ParleyCore
import XCTest

final class AppRecordTests: XCTestCase {
    static let id1 = MessageID(bytes: Array(0x00...0x0f))!  // 16 bytes by construction
    static let id2 = MessageID(bytes: Array(0xf0...0xff))!  // 16 bytes by construction

    /// Encodes `record` and decodes it back through the stream decoder (header included).
    func roundTrip(_ record: AppRecord) throws -> AppRecord? {
        var decoder = RecordStreamDecoder()
        decoder.append(record.encoded())
        let out = try decoder.next()
        XCTAssertEqual(decoder.bufferedByteCount, 0)
        return out
    }

    /// `type | u32be length | payload`.
    func raw(_ type: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let n = UInt32(payload.count)
        return [type, UInt8(n >> 24), UInt8((n >> 16) & 0xff), UInt8((n >> 8) & 0xff), UInt8(n & 0xff)] + payload
    }

    func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(56 - 8 * $0)) } }

    func assertMalformed(_ type: UInt8, _ payload: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try AppRecord.decode(type: type, payload: payload), file: file, line: line) { error in
            guard case .malformed(let t, _) = error as? AppRecordError, t == type else {
                return XCTFail("expected malformed(type: \(type)), got \(error)", file: file, line: line)
            }
        }
    }

    // MARK: - Round trips

    func testEveryRecordTypeRoundTrips() throws {
        let records: [AppRecord] = [
            .chat(ChatRecord(id: Self.id1, sequence: 1, createdAt: 1_767_225_600_000, body: "Hi Bob")),
            .chat(ChatRecord(id: .random(), sequence: UInt64.max, createdAt: 0, body: "")),
            .chat(ChatRecord(id: .random(), sequence: 42, createdAt: 7, body: "Zoë 张伟 🦊\n\u{0}tab\there")),
            .chat(
                ChatRecord(
                    id: .random(), sequence: 3, createdAt: 9,
                    body: String(repeating: "é", count: WireLimits.maxBodyBytes / 2))),
            .ack([]),
            .ack([Self.id1]),
            .ack([Self.id1, Self.id2]),
            .ack((0..<WireLimits.maxAcksPerRecord).map { _ in MessageID.random() }),
            .readReceipt([]),
            .readReceipt([Self.id2, Self.id1]),
            .readReceipt((0..<WireLimits.maxAcksPerRecord).map { _ in MessageID.random() }),
            .cardUpdate(try ExampleKeys.aliceCard().encoded()),
            .ping(0), .ping(UInt64.max), .pong(0x0102_0304_0506_0708),
            .close(.normal, ""), .close(.duplicate, "another session was kept"),
            .close(.protocolError, "bad record"), .close(.keyChangePending, "ä"),
            .close(.notTrusted, "x"), .close(.unknown, ""),
            .refused(.peerQuota, [Self.id1]), .refused(.nodeQuota, [Self.id1, Self.id2]), .refused(.diskFull, []),
            .refused(.unknown, (0..<WireLimits.maxAcksPerRecord).map { _ in MessageID.random() }),
            .listenPorts([7744]), .listenPorts((1...UInt16(WireLimits.maxListenPorts)).map { $0 * 1000 })
        ]
        for record in records {
            XCTAssertEqual(try roundTrip(record), record)
        }
    }

    func testListenPortsAreBoundedAndNeverZero() {
        XCTAssertEqual(AppRecord.listenPorts([7744, 1]).encoded(), [0x20, 0, 0, 0, 5, 2, 0x1E, 0x40, 0, 1])
        assertMalformed(0x20, [0])
        assertMalformed(0x20, [1, 0, 0])
        assertMalformed(0x20, [2, 0x1E, 0x40])
        assertMalformed(
            0x20,
            [UInt8(WireLimits.maxListenPorts + 1)] + Array(repeating: 1, count: 2 * (WireLimits.maxListenPorts + 1)))
        assertMalformed(0x20, [1, 0x1E, 0x40, 9])
    }

    func testTypeCodesAndHeaderAreAsDocumented() {
        XCTAssertEqual(AppRecord.ping(1).encoded(), [0x04, 0, 0, 0, 8] + be64(1))
        XCTAssertEqual(AppRecord.pong(2).encoded(), [0x05, 0, 0, 0, 8] + be64(2))
        XCTAssertEqual(AppRecord.close(.duplicate, "dup").encoded(), [0x06, 0, 0, 0, 4, 0x01] + Array("dup".utf8))
        XCTAssertEqual(AppRecord.cardUpdate([9, 9]).encoded(), [0x03, 0, 0, 0, 2, 9, 9])
        XCTAssertEqual(AppRecord.ack([]).encoded(), [0x02, 0, 0, 0, 2, 0, 0])
        XCTAssertEqual(AppRecord.readReceipt([Self.id1]).encoded(), [0x08, 0, 0, 0, 18, 0, 1] + Self.id1.bytes)
        XCTAssertEqual(
            AppRecord.chat(ChatRecord(id: Self.id1, sequence: 2, createdAt: 3, body: "a")).encoded(),
            [0x01, 0, 0, 0, 33] + Self.id1.bytes + be64(2) + be64(3) + [0x61])
        XCTAssertEqual(
            [CloseReason.normal, .duplicate, .protocolError, .keyChangePending, .notTrusted, .unknown].map(\.rawValue),
            [0, 1, 2, 3, 4, 255])
    }

    func testCloseReasonTextIsCappedAndUnknownCodesMapToUnknown() throws {
        let long = String(repeating: "x", count: WireLimits.maxCloseReasonBytes + 50)
        let encoded = AppRecord.close(.normal, long).encoded()
        XCTAssertEqual(encoded.count, AppRecord.headerLength + 1 + WireLimits.maxCloseReasonBytes)
        XCTAssertEqual(
            try roundTrip(.close(.normal, long)),
            .close(.normal, String(repeating: "x", count: WireLimits.maxCloseReasonBytes)))
        XCTAssertEqual(try AppRecord.decode(type: 0x06, payload: [0x77] + Array("why".utf8)), .close(.unknown, "why"))
        assertMalformed(0x06, [])
        // Multi-byte characters are never cut in half: 199 ASCII bytes then "ä" (2 bytes)
        // keeps only the ASCII part.
        let mixed = String(repeating: "y", count: WireLimits.maxCloseReasonBytes - 1) + "ää"
        XCTAssertEqual(
            try roundTrip(.close(.normal, mixed)),
            .close(.normal, String(repeating: "y", count: WireLimits.maxCloseReasonBytes - 1)))
    }

    // MARK: - Malformed

    func testTruncatedChatIsMalformed() {
        let full = Self.id1.bytes + be64(1) + be64(2)
        for n in 0..<full.count {
            assertMalformed(0x01, Array(full.prefix(n)))
        }
        XCTAssertNoThrow(try AppRecord.decode(type: 0x01, payload: full), "an empty body is allowed")
    }

    func testAckWithTooManyIdsIsMalformed() {
        let n = WireLimits.maxAcksPerRecord + 1
        let payload = [UInt8(n >> 8), UInt8(n & 0xff)] + [UInt8](repeating: 7, count: n * MessageID.length)
        assertMalformed(0x02, payload)
        // The count is checked before the ids are read: a huge count with no ids is refused the same way.
        assertMalformed(0x02, [0xff, 0xff])
    }

    func testAckWithTrailingOrMissingBytesIsMalformed() {
        assertMalformed(0x02, [0, 1] + Self.id1.bytes + [0])
        assertMalformed(0x02, [0, 2] + Self.id1.bytes)
        assertMalformed(0x02, [0, 1] + Self.id1.bytes.dropLast())
        assertMalformed(0x02, [0])
        assertMalformed(0x02, [])
    }

    func testReadReceiptIsCheckedLikeAnAck() {
        let n = WireLimits.maxAcksPerRecord + 1
        assertMalformed(0x08, [UInt8(n >> 8), UInt8(n & 0xff)] + [UInt8](repeating: 7, count: n * MessageID.length))
        assertMalformed(0x08, [0xff, 0xff])
        assertMalformed(0x08, [0, 1] + Self.id1.bytes + [0])
        assertMalformed(0x08, [0, 2] + Self.id1.bytes)
        assertMalformed(0x08, [0])
        assertMalformed(0x08, [])
    }

    func testRefusedRecordLayoutAndRules() throws {
        XCTAssertEqual(
            AppRecord.refused(.diskFull, [Self.id1]).encoded(), [0x07, 0, 0, 0, 19, 3, 0, 1] + Self.id1.bytes)
        // A reason this version does not know is kept as `unknown`, not a protocol error.
        XCTAssertEqual(
            try AppRecord.decode(type: 0x07, payload: [42, 0, 1] + Self.id1.bytes), .refused(.unknown, [Self.id1]))
        let n = WireLimits.maxAcksPerRecord + 1
        assertMalformed(0x07, [1, UInt8(n >> 8), UInt8(n & 0xff)] + [UInt8](repeating: 7, count: n * MessageID.length))
        assertMalformed(0x07, [1, 0, 1] + Self.id1.bytes + [0])
        assertMalformed(0x07, [1, 0, 2] + Self.id1.bytes)
        assertMalformed(0x07, [1])
        assertMalformed(0x07, [])
    }

    func testOversizeBodyIsRefused() throws {
        let header = Self.id1.bytes + be64(1) + be64(2)
        let atLimit = header + [UInt8](repeating: 0x61, count: WireLimits.maxBodyBytes)
        guard case .chat(let c) = try AppRecord.decode(type: 0x01, payload: atLimit) else { return XCTFail() }
        XCTAssertEqual(c.body.utf8.count, WireLimits.maxBodyBytes)
        XCTAssertThrowsError(try AppRecord.decode(type: 0x01, payload: atLimit + [0x61])) {
            XCTAssertEqual($0 as? AppRecordError, .bodyTooLarge(WireLimits.maxBodyBytes + 1))
        }
    }

    func testInvalidUTF8BodyIsRefused() {
        let header = Self.id1.bytes + be64(1) + be64(2)
        for bad: [UInt8] in [[0xff], [0xc3], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x61, 0xf4, 0x90, 0x80, 0x80]] {
            XCTAssertThrowsError(try AppRecord.decode(type: 0x01, payload: header + bad), "\(bad)") {
                XCTAssertEqual($0 as? AppRecordError, .invalidUTF8)
            }
        }
    }

    func testPingAndPongWithWrongLengthAreMalformed() {
        for type: UInt8 in [0x04, 0x05] {
            assertMalformed(type, be64(1) + [0])
            assertMalformed(type, Array(be64(1).dropLast()))
            assertMalformed(type, [])
        }
    }

    func testUnknownTypeDecodesAsUnknownAndTheStreamMovesPastIt() throws {
        XCTAssertEqual(try AppRecord.decode(type: 0x00, payload: [1, 2, 3]), .unknown(type: 0x00, length: 3))
        XCTAssertEqual(try AppRecord.decode(type: 0x99, payload: []), .unknown(type: 0x99, length: 0))

        var stream = raw(0x42, Array(repeating: 0xee, count: 300))
        stream += AppRecord.ping(5).encoded()
        stream += raw(0xff, [])
        stream += AppRecord.pong(5).encoded()
        var decoder = RecordStreamDecoder()
        decoder.append(stream)
        XCTAssertEqual(try decoder.next(), .unknown(type: 0x42, length: 300))
        XCTAssertEqual(try decoder.next(), .ping(5))
        XCTAssertEqual(try decoder.next(), .unknown(type: 0xff, length: 0))
        XCTAssertEqual(try decoder.next(), .pong(5))
        XCTAssertNil(try decoder.next())
        XCTAssertEqual(AppRecord.unknown(type: 0x42, length: 3).encoded(), [], "unknown records are never sent")
    }

    func testMessageIDs() {
        XCTAssertNil(MessageID(bytes: [1, 2, 3]))
        XCTAssertNil(MessageID(hex: "00"))
        XCTAssertNil(MessageID(hex: "zz" + String(repeating: "0", count: 30)))
        XCTAssertEqual(MessageID(hex: Self.id1.hex), Self.id1)
        XCTAssertEqual(Self.id1.hex, "000102030405060708090a0b0c0d0e0f")
        XCTAssertNotEqual(MessageID.random(), MessageID.random())
    }

    func testErrorsDescribeThemselves() {
        let all: [AppRecordError] = [
            .recordTooLarge(1), .malformed(type: 1, reason: "r"), .bodyTooLarge(2), .invalidUTF8
        ]
        XCTAssertEqual(Set(all.map(\.description)).count, all.count)
    }

    // MARK: - Documented examples

    func testDocumentedChatRecordMatchesCode() throws {
        let record = AppRecord.chat(ChatRecord(id: Self.id1, sequence: 1, createdAt: 1_767_225_600_000, body: "Hi Bob"))
        let hex = try ProtocolDoc.hexExample("chat-record")
        XCTAssertEqual(Sodium.hex(record.encoded()), hex)
        var decoder = RecordStreamDecoder()
        decoder.append(try XCTUnwrap(Sodium.fromHex(hex)))
        XCTAssertEqual(try decoder.next(), record)
    }

    func testDocumentedAckRecordMatchesCode() throws {
        let record = AppRecord.ack([Self.id1, Self.id2])
        let hex = try ProtocolDoc.hexExample("ack-record")
        XCTAssertEqual(Sodium.hex(record.encoded()), hex)
        var decoder = RecordStreamDecoder()
        decoder.append(try XCTUnwrap(Sodium.fromHex(hex)))
        XCTAssertEqual(try decoder.next(), record)
    }

    func testDocumentedReadReceiptRecordMatchesCode() throws {
        let record = AppRecord.readReceipt([Self.id1])
        let hex = try ProtocolDoc.hexExample("read-receipt-record")
        XCTAssertEqual(Sodium.hex(record.encoded()), hex)
        var decoder = RecordStreamDecoder()
        decoder.append(try XCTUnwrap(Sodium.fromHex(hex)))
        XCTAssertEqual(try decoder.next(), record)
    }

    /// Issue 33 item 8: 0xF0...0xFF are never assigned, and are skipped like unknown types
    /// even from a peer that announced every feature.
    func testTypesReservedForExperimentsAreNeverAssignedAndAreSkipped() throws {
        for type in AppRecord.reservedForExperiments {
            XCTAssertNil(AppRecord.RecordType(rawValue: type), "type \(type) is reserved for experiments")
            var decoder = RecordStreamDecoder(peerFeatures: .supported)
            decoder.append([type, 0, 0, 0, 3, 0xFF, 0x00, 0x01])
            XCTAssertEqual(try decoder.next(), .unknown(type: type, length: 3))
        }
    }
}
