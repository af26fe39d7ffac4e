import ParleyCore
import XCTest

/// Room cards (issue 30; docs/PROTOCOL.md "Room cards"): record 0x18, features bit 4.
final class RoomCardRecordTests: XCTestCase {
    let room = RoomID(exactly: Array(repeating: 0x42, count: 16))

    func card(_ name: String = "carol") throws -> Card {
        try Card.issue(
            identity: IdentityKeyPair.generate(), noiseKey: NoiseStaticKeyPair.generate().publicKey,
            displayName: name, hostName: "carol-host", issuedAt: 1_700_000_000, sequence: 1)
    }

    func testARoomCardIsTheRoomIdThenTheCardAndRoundTrips() throws {
        let c = try card()
        let record = RoomCardRecord(roomID: room, card: c.encoded())
        XCTAssertEqual(record.encoded(), room.bytes + c.encoded())
        XCTAssertEqual(try AppRecord.decode(type: 0x18, payload: record.encoded()), .roomCard(record))
        let stream = AppRecord.roomCard(record).encoded()
        XCTAssertEqual(stream[0], 0x18)
        XCTAssertEqual(Array(stream[5...]), record.encoded())
    }

    /// The record carries unverified bytes: a card whose signature fails still decodes as a
    /// record (the receiver refuses it without closing the session); only its size is
    /// checked here.
    func testOnlyTheSizeIsCheckedWhenDecodingTheRecord() throws {
        var forged = try card().encoded()
        forged[10] ^= 1
        XCTAssertNoThrow(try AppRecord.decode(type: 0x18, payload: room.bytes + forged))
        XCTAssertThrowsError(try AppRecord.decode(type: 0x18, payload: room.bytes + Array(forged.prefix(10))))
        XCTAssertThrowsError(
            try AppRecord.decode(type: 0x18, payload: room.bytes + forged + Array(repeating: 0, count: 400)))
    }

    func testRoomCardsAreFeatureBitFourAndUnderstood() {
        XCTAssertEqual(ProtocolFeatures.roomCards.rawValue, 1 << 4)
        XCTAssertEqual(AppRecord.RecordType.roomCard.feature, .roomCards)
        XCTAssertTrue(ProtocolFeatures.supported.contains(.roomCards))
    }
}
