import ParleyCore
import XCTest

/// The two room record types inside the session's record stream.
final class RoomRecordTests: XCTestCase {
    static let id1 = MessageID(bytes: Array(0x00...0x0f))!  // 16 bytes by construction
    static let room = RoomID(bytes: Array(0xa0...0xaf))!  // 16 bytes by construction

    func roundTrip(_ record: AppRecord) throws -> AppRecord? {
        var decoder = RecordStreamDecoder()
        decoder.append(record.encoded())
        return try decoder.next()
    }

    func assertMalformed(_ type: UInt8, _ payload: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try AppRecord.decode(type: type, payload: payload), file: file, line: line) { error in
            guard case .malformed(let t, _) = error as? AppRecordError, t == type else {
                return XCTFail("expected malformed(type: \(type)), got \(error)", file: file, line: line)
            }
        }
    }

    func testRoomRecordsRoundTrip() throws {
        let op = try RoomOperation.create(
            name: "lab", members: [ExampleKeys.bobIdentity.publicKey],
            by: ExampleKeys.aliceIdentity, createdAt: 1)
        let records: [AppRecord] = [
            .roomOperation(op),
            .roomChat(RoomChatRecord(id: Self.id1, roomID: Self.room, sequence: 7, createdAt: 9, body: "hi lab")),
            .roomChat(RoomChatRecord(id: .random(), roomID: .random(), sequence: .max, createdAt: 0, body: "")),
            .roomChat(
                RoomChatRecord(
                    id: .random(), roomID: Self.room, sequence: 1, createdAt: 2,
                    body: String(repeating: "é", count: WireLimits.maxBodyBytes / 2)))
        ]
        for r in records { XCTAssertEqual(try roundTrip(r), r) }
        XCTAssertEqual(AppRecord.RecordType.roomOperation.rawValue, 0x10)
        XCTAssertEqual(AppRecord.RecordType.roomChat.rawValue, 0x11)
    }

    func testDocumentedRoomChatRecord() throws {
        let record = AppRecord.roomChat(
            RoomChatRecord(
                id: Self.id1, roomID: Self.room, sequence: 1,
                createdAt: 1_767_225_600_000, body: "hi lab"))
        XCTAssertEqual(Sodium.hex(record.encoded()), try ProtocolDoc.hexExample("room-chat-record"))
    }

    func testMalformedRoomChat() {
        let header = Self.id1.bytes + Self.room.bytes + [UInt8](repeating: 0, count: 16)
        for n in 0..<RoomChatRecord.headerLength { assertMalformed(0x11, Array(header.prefix(n))) }
        XCTAssertNoThrow(try AppRecord.decode(type: 0x11, payload: header))
        XCTAssertThrowsError(try AppRecord.decode(type: 0x11, payload: header + [0xff])) { error in
            XCTAssertEqual(error as? AppRecordError, .invalidUTF8)
        }
        let big = header + [UInt8](repeating: 0x61, count: WireLimits.maxBodyBytes + 1)
        XCTAssertThrowsError(try AppRecord.decode(type: 0x11, payload: big)) { error in
            XCTAssertEqual(error as? AppRecordError, .bodyTooLarge(WireLimits.maxBodyBytes + 1))
        }
    }

    func testTamperedOrTruncatedOperationIsAProtocolError() throws {
        let op = try RoomOperation.create(
            name: "lab", members: [], by: ExampleKeys.aliceIdentity,
            createdAt: 1)
        var bytes = op.encoded()
        bytes[bytes.count - 1] ^= 1
        assertMalformed(0x10, bytes)
        assertMalformed(0x10, Array(op.encoded().dropLast()))
        assertMalformed(0x10, [])
    }
}
