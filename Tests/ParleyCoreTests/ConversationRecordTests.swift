import ParleyCore
import XCTest

/// Replies, edits, deletes, reactions and status (docs/PROTOCOL.md, "Conversation records").
final class ConversationRecordTests: XCTestCase {
    static let target = MessageID(bytes: Array(0x00...0x0f))!  // 16 bytes by construction
    static let id = MessageID(bytes: Array(0x10...0x1f))!  // 16 bytes by construction
    static let createdAt: UInt64 = 1_767_225_660_000

    func action(_ a: MessageActionRecord.Action) -> AppRecord {
        .messageAction(
            MessageActionRecord(id: Self.id, sequence: 2, createdAt: Self.createdAt, target: Self.target, action: a))
    }

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

    func testEveryConversationRecordRoundTrips() throws {
        let records: [AppRecord] = [
            .chat(
                ChatRecord(id: Self.id, sequence: 2, createdAt: Self.createdAt, body: "Hi Bob!", replyTo: Self.target)),
            .chat(ChatRecord(id: .random(), sequence: 9, createdAt: 0, body: "", replyTo: .random())),
            action(.edit(body: "new text")),
            action(.edit(body: "")),
            action(.edit(body: String(repeating: "é", count: WireLimits.maxBodyBytes / 2))),
            action(.delete),
            action(.reaction(try Reaction("👍"), added: true)),
            action(.reaction(try Reaction("+1"), added: false)),
            action(.reaction(try Reaction("👨‍👩‍👧‍👦"), added: true)),
            .status(try PresenceStatus(typed: "in a meeting until 3")),
            .status(.none)
        ]
        for record in records { XCTAssertEqual(try roundTrip(record), record) }
    }

    func testExamplesAreThoseOfTheProtocolDocument() throws {
        let reply = AppRecord.chat(
            ChatRecord(
                id: Self.id, sequence: 2, createdAt: Self.createdAt, body: "Hi Bob!",
                replyTo: Self.target))
        XCTAssertEqual(Sodium.hex(reply.encoded()), try ProtocolDoc.hexExample("reply-record"))
        XCTAssertEqual(Sodium.hex(action(.delete).encoded()), try ProtocolDoc.hexExample("delete-record"))
        XCTAssertEqual(
            Sodium.hex(action(.reaction(try Reaction("👍"), added: true)).encoded()),
            try ProtocolDoc.hexExample("reaction-record"))
        XCTAssertEqual(
            Sodium.hex(AppRecord.status(try PresenceStatus(typed: "in a meeting")).encoded()),
            try ProtocolDoc.hexExample("status-record"))
        // A chat without replyTo is still the plain chat record (0x01).
        XCTAssertEqual(
            AppRecord.chat(ChatRecord(id: Self.id, sequence: 1, createdAt: 0, body: "x")).encoded().first, 0x01)
    }

    func testTruncatedFixedPartsAreMalformed() {
        let fixed = Self.id.bytes + [UInt8](repeating: 0, count: 16) + Self.target.bytes
        for type: UInt8 in [0x09, 0x0A, 0x0B, 0x0C] {
            for n in 0..<fixed.count { assertMalformed(type, Array(fixed.prefix(n))) }
        }
        XCTAssertNoThrow(try AppRecord.decode(type: 0x0B, payload: fixed))
        assertMalformed(0x0B, fixed + [0])  // a delete carries nothing after the target
        assertMalformed(0x0C, fixed)  // no flag
        assertMalformed(0x0C, fixed + [1])  // no text
        assertMalformed(0x0C, fixed + [2] + Array("👍".utf8))  // flag neither 0 nor 1
    }

    func testBodiesFollowTheChatRules() {
        let fixed = Self.id.bytes + [UInt8](repeating: 0, count: 16) + Self.target.bytes
        for type: UInt8 in [0x09, 0x0A] {
            XCTAssertThrowsError(try AppRecord.decode(type: type, payload: fixed + [0xff])) {
                XCTAssertEqual($0 as? AppRecordError, .invalidUTF8)
            }
            let big = [UInt8](repeating: 0x61, count: WireLimits.maxBodyBytes + 1)
            XCTAssertThrowsError(try AppRecord.decode(type: type, payload: fixed + big)) {
                XCTAssertEqual($0 as? AppRecordError, .bodyTooLarge(WireLimits.maxBodyBytes + 1))
            }
        }
    }

    func testReactionRules() throws {
        for ok in ["👍", "👍🏽", "❤️", "🏳️‍🌈", "+1", "lol", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "ok!"] { XCTAssertNoThrow(try Reaction(ok), ok) }
        XCTAssertEqual(try? Reaction(""), nil)
        XCTAssertThrowsError(try Reaction("a b")) {
            XCTAssertEqual($0 as? ReactionError, .forbiddenCharacter(codePoint: 0x20))
        }
        XCTAssertThrowsError(try Reaction("\u{200B}")) {
            XCTAssertEqual($0 as? ReactionError, .forbiddenCharacter(codePoint: 0x200B))
        }
        XCTAssertThrowsError(try Reaction("x\u{202E}")) {
            XCTAssertEqual($0 as? ReactionError, .forbiddenCharacter(codePoint: 0x202E))
        }
        XCTAssertThrowsError(try Reaction("\u{1B}[2J")) {
            XCTAssertEqual($0 as? ReactionError, .forbiddenCharacter(codePoint: 0x1B))
        }
        XCTAssertThrowsError(try Reaction("a\nb"))
        XCTAssertThrowsError(try Reaction("abcdefghi")) { XCTAssertEqual($0 as? ReactionError, .tooManyCharacters(9)) }
        XCTAssertThrowsError(try Reaction(String(repeating: "👍", count: 13))) {
            XCTAssertEqual($0 as? ReactionError, .tooLong(bytes: 52))
        }
        XCTAssertThrowsError(try Reaction(utf8: [0xf0, 0x9f])) { XCTAssertEqual($0 as? ReactionError, .notUTF8) }
        // On the wire a bad reaction is a malformed record, not a crash or a stored string.
        let fixed = Self.id.bytes + [UInt8](repeating: 0, count: 16) + Self.target.bytes
        assertMalformed(0x0C, fixed + [1] + Array("a b".utf8))
        assertMalformed(0x0C, fixed + [1] + [UInt8](repeating: 0x61, count: WireLimits.maxReactionBytes + 1))
    }

    func testStatusRules() throws {
        XCTAssertEqual(try PresenceStatus(typed: "café").text, "café")
        XCTAssertEqual(try PresenceStatus(typed: "cafe\u{301}").text, "café")  // typed text is normalized
        XCTAssertEqual(
            try PresenceStatus(typed: String(repeating: "x", count: WireLimits.maxStatusBytes)).text.utf8.count,
            WireLimits.maxStatusBytes)
        XCTAssertThrowsError(try PresenceStatus(typed: String(repeating: "x", count: WireLimits.maxStatusBytes + 1))) {
            XCTAssertEqual($0 as? PresenceStatusError, .tooLong(bytes: WireLimits.maxStatusBytes + 1))
        }
        XCTAssertThrowsError(try PresenceStatus(typed: "two\nlines")) {
            XCTAssertEqual($0 as? PresenceStatusError, .forbiddenCharacter(codePoint: 0x0A))
        }
        XCTAssertThrowsError(try PresenceStatus(typed: "evil\u{202E}txt"))
        XCTAssertThrowsError(try PresenceStatus(utf8: Array("cafe\u{301}".utf8))) {
            XCTAssertEqual($0 as? PresenceStatusError, .notNormalized)  // on the wire it must already be NFC
        }
        assertMalformed(0x0D, Array("two\u{2028}lines".utf8))
        assertMalformed(0x0D, [0xc3])
    }

    func testOptionalRecordsFromAPeerThatDidNotAnnounceThemAreSkipped() throws {
        let reply = AppRecord.chat(ChatRecord(id: Self.id, sequence: 2, createdAt: 0, body: "x", replyTo: Self.target))
        let bytes = reply.encoded() + action(.delete).encoded() + AppRecord.ping(1).encoded()
        var old = RecordStreamDecoder(peerFeatures: [])
        old.append(bytes)
        XCTAssertEqual(try old.next(), .unknown(type: 0x09, length: bytes.count - 5 - 53 - 13))
        XCTAssertEqual(try old.next(), .unknown(type: 0x0B, length: 48))
        XCTAssertEqual(try old.next(), .ping(1))
        // Even a malformed one: it is not read at all.
        var lenient = RecordStreamDecoder(peerFeatures: [])
        lenient.append([0x09, 0, 0, 0, 0])
        XCTAssertEqual(try lenient.next(), .unknown(type: 0x09, length: 0))
        var announced = RecordStreamDecoder(peerFeatures: .conversation)
        announced.append(bytes)
        XCTAssertEqual(try announced.next(), reply)
        var strict = RecordStreamDecoder(peerFeatures: .conversation)
        strict.append([0x09, 0, 0, 0, 0])
        XCTAssertThrowsError(try strict.next())
    }

    func testRoomVariantsCarryTheRoomFirst() throws {
        let room = RoomID(exactly: Array(0xa0...0xaf))
        let records: [AppRecord] = [
            .roomChat(
                RoomChatRecord(
                    id: Self.id, roomID: room, sequence: 2, createdAt: Self.createdAt, body: "yes",
                    replyTo: Self.target)),
            .messageAction(
                MessageActionRecord(
                    id: Self.id, sequence: 2, createdAt: Self.createdAt, target: Self.target,
                    action: .edit(body: "x"), room: room)),
            .messageAction(
                MessageActionRecord(
                    id: Self.id, sequence: 2, createdAt: Self.createdAt, target: Self.target,
                    action: .delete, room: room)),
            .messageAction(
                MessageActionRecord(
                    id: Self.id, sequence: 2, createdAt: Self.createdAt, target: Self.target,
                    action: .reaction(try Reaction("🎉"), added: false), room: room))
        ]
        for (record, type) in zip(records, [UInt8(0x12), 0x13, 0x14, 0x15]) {
            XCTAssertEqual(try roundTrip(record), record)
            let bytes = record.encoded()
            XCTAssertEqual(bytes[0], type)
            // roomReply keeps roomChat's layout (id, then room); the actions put the room first.
            let at = type == 0x12 ? 21 : 5
            XCTAssertEqual(Array(bytes[at..<(at + 16)]), room.bytes)
        }
        let delete = try XCTUnwrap(records[2].encoded())
        XCTAssertEqual(Sodium.hex(delete), try ProtocolDoc.hexExample("room-delete-record"))
        // A room action shorter than room id + fixed part is malformed.
        let fixed = room.bytes + Self.id.bytes + [UInt8](repeating: 0, count: 16) + Self.target.bytes
        for type: UInt8 in [0x13, 0x14, 0x15] {
            for n in stride(from: 0, to: fixed.count, by: 7) { assertMalformed(type, Array(fixed.prefix(n))) }
        }
        XCTAssertNoThrow(try AppRecord.decode(type: 0x14, payload: fixed))
        for n in 0..<(RoomChatRecord.headerLength + MessageID.length) {
            assertMalformed(0x12, Array((Self.id.bytes + room.bytes + [UInt8](repeating: 0, count: 32)).prefix(n)))
        }
    }

    func testHandshakeFeaturesAreAnnouncedAndOldPayloadsReadAsNone() throws {
        let card = try ExampleKeys.aliceCard().encoded()
        let boot = Array(0xa0...0xaf).map(UInt8.init)
        let with = HandshakePayload(card: card, bootID: boot, features: .supported)
        XCTAssertEqual(try HandshakePayload.decode(with.encoded()).features, .supported)
        // Bit 0 conversation records, bit 1 files (issue 18), bit 2 address gossip (issue 19),
        // bit 3 room sync, bit 4 room cards, bit 5 operation summaries (issue 30), bit 6
        // refused changes, bit 7 removal caps (issue 32).
        XCTAssertEqual(Array(with.encoded().suffix(7)), [0x10, 0x00, 0x04, 0x00, 0x00, 0x00, 0xFF])
        // Without features the payload is byte for byte the old one (no field 0x03).
        let without = HandshakePayload(card: card, bootID: boot)
        XCTAssertEqual(try HandshakePayload.decode(without.encoded()).features, [])
        XCTAssertFalse(without.encoded().count == with.encoded().count)
        // Unknown bits are ignored; a wrong length or a repeat is malformed.
        let future = without.encoded() + [0x10, 0x00, 0x04, 0x80, 0x00, 0x00, 0x01]
        XCTAssertTrue(try HandshakePayload.decode(future).features.contains(.conversation))
        XCTAssertThrowsError(try HandshakePayload.decode(without.encoded() + [0x10, 0x00, 0x01, 0x01]))
        XCTAssertThrowsError(try HandshakePayload.decode(with.encoded() + [0x10, 0x00, 0x04, 0, 0, 0, 1]))
    }
}
