import Foundation
import ParleyControlProtocol
import SeededRandom
import XCTest

/// The hand-written JSON encoder and parser must be indistinguishable from Foundation's
/// (`ControlJSON.encoder()`/`JSONDecoder`) on everything the control protocol sends.
final class CanonicalJSONTests: XCTestCase {
    private func foundation<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try ControlJSON.encoder().encode(value), as: UTF8.self)
    }

    private func canonical<T: Encodable>(_ value: T) throws -> String {
        String(decoding: try CanonicalJSON.encode(value), as: UTF8.self)
    }

    private func assertSameBytes<T: Encodable>(_ value: T, file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try canonical(value), try foundation(value), file: file, line: line)
    }

    /// A hand-written notification line (`ControlEventLine`) against Foundation's encoding
    /// of the same notification with `eventId` added to its params.
    private func assertSameLine<P: ControlEventParamsWritable>(
        _ params: P, eventID: Int?, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        var members = try JSONValue(encoding: params).objectValue ?? [:]
        if let eventID { members[ControlEvent.eventIDKey] = .int(eventID) }
        let generic = try foundation(JSONRPCNotification(method: P.method, params: members))
        let hand = String(
            decoding: ControlEventLine.bytes(method: P.method, params: params, eventID: eventID), as: UTF8.self)
        XCTAssertEqual(hand, generic, file: file, line: line)
    }

    /// Every ASCII character (controls, quote, backslash, slash, DEL) and some beyond.
    func testStringEscapingMatchesFoundationForEveryASCIICharacter() throws {
        for code in 0..<0x80 {
            let s = "a" + String(UnicodeScalar(UInt8(code))) + "b"
            try assertSameBytes(["k": s])
        }
        try assertSameBytes(["k": "é漢字🙂\u{2028}\u{2029}\u{FEFF}"])
        try assertSameBytes(["k": ""])
        try assertSameBytes(["k": String(repeating: "\"\\/\n", count: 50)])
    }

    func testKeysAreSortedByUTF8Bytes() throws {
        let dict = ["b": 1, "a": 2, "B": 3, "aa": 4, "a_b": 5, "é": 6, "Z": 7, "": 8, "10": 9, "9": 10]
        try assertSameBytes(dict)
        XCTAssertEqual(try canonical(["b": 1, "a": 2]), #"{"a":2,"b":1}"#)
    }

    func testScalarsNullsAndNesting() throws {
        try assertSameBytes([Int.min, Int.max, 0, -1])
        try assertSameBytes([true, false])
        try assertSameBytes([String?.none, "x"])
        try assertSameBytes([[String: [Int]]]())
        try assertSameBytes(["a": [String: Int](), "b": [:]])
        try assertSameBytes(["x": [[1, 2], [], [3]]])
        try assertSameBytes(UInt64.max)
        try assertSameBytes("top-level string")
    }

    /// Doubles are Foundation's to format: the canonical encoder hands them over.
    func testDoublesFallBackToFoundation() throws {
        try assertSameBytes(JSONValue.object(["d": .double(1.5), "i": .int(3)]))
        try assertSameBytes([0.1, 2.0, -3.25e-7, 1e300])
    }

    /// Random messages, peers and statuses as the daemon sends them.
    func testProtocolTypesMatchFoundationOnRandomValues() throws {
        var rng = SplitMix64(seed: 0x5EED_0042)
        let alphabet = Array("abcXYZ019 \"\\/\n\t\r\u{0}\u{1F}\u{7F}é漢🙂-_:.{}[],")
        func text(_ max: Int) -> String {
            String((0..<Int.random(in: 0...max, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
        }
        func maybe<T>(_ v: T) -> T? { Bool.random(using: &rng) ? v : nil }
        for _ in 0..<300 {
            let room = maybe(MessageRoom(id: text(8), name: text(8)))
            let info = MessageInfo(
                id: text(32), from: text(20), fromName: text(12), to: text(20), toName: text(12),
                direction: Bool.random(using: &rng) ? .incoming : .outgoing,
                sequence: Int.random(in: 0...1_000_000, using: &rng),
                createdAt: Int.random(in: Int.min...Int.max, using: &rng), body: text(100),
                state: MessageState.allCases.randomElement(using: &rng)!,
                deliveredAt: maybe(Int.random(in: 0...9, using: &rng)),
                cursor: Int.random(in: 0...99, using: &rng), readAt: maybe(42), room: room,
                replyTo: maybe(
                    MessageQuote(
                        id: text(8), fromName: maybe(text(6)), excerpt: maybe(text(20)),
                        deleted: Bool.random(using: &rng))),
                editedAt: maybe(5), deletedAt: maybe(6),
                reactions: (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    MessageReaction(
                        reaction: text(4), fromNames: (0..<Int.random(in: 0...2, using: &rng)).map { _ in text(5) },
                        mine: Bool.random(using: &rng))
                })
            try assertSameBytes(MessageReceivedEvent(message: info))
            let eventID = maybe(Int.random(in: 0...Int.max, using: &rng))
            try assertSameLine(MessageReceivedEvent(message: info), eventID: eventID)
            try assertSameLine(
                MessageDeliveredEvent(
                    id: text(32), to: text(20), deliveredAt: Int.random(in: 0...Int.max, using: &rng)),
                eventID: eventID)
            try assertSameBytes(MessageUpdatedEvent(message: info))
            try assertSameBytes(MessagesSendResult(message: info))
            let answer = MessagesSendResult(
                message: info, peerOnline: maybe(Bool.random(using: &rng)), roomRecipients: maybe(3),
                roomRecipientsOnline: maybe(Int.random(in: 0...3, using: &rng)))
            try assertSameBytes(answer)
            try assertSameBytes(
                JSONRPCTypedSuccess(id: maybe(JSONRPCID.number(Int.random(in: -9...9, using: &rng))), result: answer))
            try assertSameBytes(
                JSONRPCTypedSuccess(
                    id: .number(Int.random(in: -5...5, using: &rng)), result: MessagesSendResult(message: info)))
            try assertSameBytes(JSONRPCTypedSuccess(id: .string(text(6)), result: MessagesSendResult(message: info)))
            try assertSameBytes(JSONRPCResponse.success(id: nil, result: MessagesSendResult(message: info)))
            let peer = PeerInfo(
                name: text(10), host: text(10), fingerprint: text(20), identityKey: text(64),
                online: Bool.random(using: &rng),
                addresses: (0..<Int.random(in: 0...3, using: &rng)).map { _ in text(15) },
                trust: .pinned, safetyNumber: text(30), lastSeen: maybe(7), queued: 3,
                unread: 1, nickname: maybe(text(8)),
                nameClash: maybe(
                    NameClashInfo(
                        kind: .confusable,
                        with: [
                            PeerCandidate(
                                name: text(5), fingerprint: text(20),
                                trust: .pending)
                        ])))
            try assertSameBytes(PeerOnlineEvent(peer: peer))
            try assertSameBytes(
                JSONRPCNotification(method: text(10), params: try JSONValue(encoding: peer).objectValue))
            try assertSameBytes(JSONRPCResponse(id: .number(1), error: .invalidParams(text(40))))
        }
    }

    /// The daemon writes every hot line into a buffer it reuses (a control connection's
    /// answer buffer, the journal's line buffer): lines appended one after another to one
    /// buffer, cleared or not in between, are each exactly Foundation's bytes, for message
    /// shapes with unicode, escapes, nil fields, rooms, replies, reactions and room delivery.
    func testLinesAppendedToOneReusedBufferAreFoundationsBytes() throws {
        var rng = SplitMix64(seed: 0x5EED_0032)
        let alphabet = Array("aZ9 \"\\/\n\t\u{0}\u{1F}\u{7F}é漢🙂\u{2028}{}[],:")
        func text(_ max: Int) -> String {
            String((0..<Int.random(in: 0...max, using: &rng)).map { _ in alphabet.randomElement(using: &rng)! })
        }
        func maybe<T>(_ v: T) -> T? { Bool.random(using: &rng) ? v : nil }
        var reused: [UInt8] = []
        var expected: [UInt8] = []
        for round in 0..<400 {
            let info = MessageInfo(
                id: text(32), from: text(64), fromName: text(12), to: text(64), toName: text(12),
                direction: Bool.random(using: &rng) ? .incoming : .outgoing,
                sequence: Int.random(in: 0...Int.max, using: &rng),
                createdAt: Int.random(in: Int.min...Int.max, using: &rng), body: text(300),
                state: MessageState.allCases.randomElement(using: &rng)!,
                deliveredAt: maybe(Int.random(in: Int.min...Int.max, using: &rng)),
                cursor: Int.random(in: 0...Int.max, using: &rng), readAt: maybe(Int.max),
                room: maybe(MessageRoom(id: text(16), name: text(16))),
                replyTo: maybe(
                    MessageQuote(
                        id: text(32), fromName: maybe(text(6)), excerpt: maybe(text(40)),
                        deleted: Bool.random(using: &rng))),
                editedAt: maybe(-1), deletedAt: maybe(0),
                reactions: (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                    MessageReaction(
                        reaction: text(4), fromNames: (0..<Int.random(in: 0...3, using: &rng)).map { _ in text(5) },
                        mine: Bool.random(using: &rng))
                },
                roomDelivery: maybe(
                    RoomDelivery(
                        members: Int.random(in: 0...1000, using: &rng),
                        heldBy: (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                            MessageHolder(fingerprint: text(20), name: text(8), at: Int.random(in: 0...99, using: &rng))
                        })))
            if round % 7 == 0 {
                // The connection clears its buffer before each answer: capacity stays, bytes go.
                reused.removeAll(keepingCapacity: true)
                expected.removeAll()
            }
            let id: JSONRPCID? = [nil, .number(Int.random(in: Int.min...Int.max, using: &rng)), .string(text(8))]
                .randomElement(using: &rng)!
            let answer = JSONRPCTypedSuccess(
                id: id,
                result: MessagesSendResult(
                    message: info, peerOnline: maybe(Bool.random(using: &rng)), roomRecipients: maybe(2),
                    roomRecipientsOnline: maybe(1)))
            try CanonicalJSON.encode(answer, appendingTo: &reused)
            expected += try ControlJSON.encoder().encode(answer)
            let eventID = maybe(Int.random(in: 0...Int.max, using: &rng))
            for params in [
                MessageReceivedEvent(message: info) as any ControlEventParamsWritable,
                MessageDeliveredEvent(id: text(32), to: text(20), deliveredAt: Int.random(in: 0...Int.max, using: &rng))
            ] {
                ControlEventLine.write(
                    method: type(of: params).method, params: params, eventID: eventID, appendingTo: &reused)
                var members = try JSONValue(encoding: params).objectValue ?? [:]
                if let eventID { members[ControlEvent.eventIDKey] = .int(eventID) }
                expected += try ControlJSON.encoder().encode(
                    JSONRPCNotification(method: type(of: params).method, params: members))
            }
            // A response that is not written by hand goes through the generic encoder, appended too.
            let error = JSONRPCResponse(id: id, error: .invalidParams(text(20)))
            try CanonicalJSON.encode(error, appendingTo: &reused)
            expected += try ControlJSON.encoder().encode(error)
            XCTAssertEqual(String(decoding: reused, as: UTF8.self), String(decoding: expected, as: UTF8.self))
        }
    }

    /// `MessageInfo` and its parts are written in place in the buffer's spare capacity
    /// (`CanonicalRawWriter`): at their longest (every byte of every string a control
    /// character, six bytes each; `Int.min`), into a buffer with no spare capacity, into one
    /// shared with a copy (which must keep its bytes) and line after line into one buffer.
    func testMessagesWrittenInPlaceAtTheirLongestAreFoundationsBytes() throws {
        let worst = String(repeating: "\u{1}", count: 300)
        let longest = MessageInfo(
            id: worst, from: worst, fromName: worst, to: worst, toName: worst, direction: .outgoing,
            sequence: Int.min, createdAt: Int.min, body: worst, state: .delivered, deliveredAt: Int.min,
            cursor: Int.min, readAt: Int.min, room: MessageRoom(id: worst, name: worst),
            replyTo: MessageQuote(id: worst, fromName: worst, excerpt: worst, deleted: false),
            editedAt: Int.min, deletedAt: Int.min,
            reactions: [MessageReaction(reaction: worst, fromNames: [worst, worst], mine: false)],
            roomDelivery: RoomDelivery(
                members: Int.min, heldBy: [MessageHolder(fingerprint: worst, name: worst, at: Int.min)]))
        let empty = MessageInfo(
            id: "", from: "", fromName: "", to: "", toName: "", direction: .incoming, sequence: 0,
            createdAt: 0, body: "", state: .received, deliveredAt: nil, cursor: 0)
        for info in [longest, empty] {
            let expected = try ControlJSON.encoder().encode(info)
            XCTAssertEqual(try CanonicalJSON.encode(info), Array(expected))

            var full: [UInt8] = Array("x".utf8)
            full.reserveCapacity(1)
            let before = full
            let shared = full
            try CanonicalJSON.encode(info, appendingTo: &full)
            XCTAssertEqual(full, before + expected)
            XCTAssertEqual(shared, before, "the copy sharing the buffer keeps its bytes")

            var lines: [UInt8] = []
            for _ in 0..<50 { try CanonicalJSON.encode(info, appendingTo: &lines) }
            XCTAssertEqual(lines, Array([[UInt8]](repeating: Array(expected), count: 50).joined()))
        }
    }

    /// Strings are scanned eight bytes at a time for a byte to escape (`CanonicalRawWriter`):
    /// every byte that needs escaping and some that do not (DEL, 0x80 and up, the bytes
    /// next to `"`, `\\` and 0x20), at every offset in and across the eight-byte words, alone
    /// and with a second one, are written exactly as Foundation writes them.
    func testEveryEscapeAtEveryOffsetMatchesFoundation() throws {
        let special: [Character] =
            (0..<0x20).map { Character(Unicode.Scalar(UInt8($0))) } + [
                "\"", "\\", " ", "!", "#", "[", "]", "\u{7F}", "\u{80}", "é", "漢", "🙂", "/"
            ]
        for c in special {
            for offset in 0..<20 {
                for tail in [0, 1, 7, 8, 9] {
                    let text = String(repeating: "a", count: offset) + String(c) + String(repeating: "b", count: tail)
                    let twice = text + String(c) + text
                    for s in [text, twice] {
                        let room = MessageRoom(id: s, name: "r")
                        XCTAssertEqual(
                            try CanonicalJSON.encode(room), Array(try ControlJSON.encoder().encode(room)),
                            "\(c.unicodeScalars.map { $0.value }) at \(offset)")
                    }
                }
            }
        }
    }

    /// `JSONValue(encoding:)` and back gives the value Foundation's round trip gave.
    func testJSONValueRoundTripAgreesWithFoundation() throws {
        let info = MessageInfo(
            id: "i", from: "f", fromName: "n", to: "t", toName: "m", direction: .incoming,
            sequence: 3, createdAt: 4, body: "b\n\"", state: .received, deliveredAt: nil, cursor: 9)
        let ours = try JSONValue(encoding: info)
        let theirs = try JSONDecoder().decode(JSONValue.self, from: try ControlJSON.encoder().encode(info))
        XCTAssertEqual(ours, theirs)
        XCTAssertEqual(try ours.decode(as: MessageInfo.self), info)
    }

    // MARK: - Parser

    private func parse(_ text: String) -> JSONValue? {
        try? JSONValue(parsing: Array(text.utf8))
    }

    func testParserAcceptsWhatJSONAllows() throws {
        XCTAssertEqual(
            parse(#" {"a" : [1, -2, 0, 3.5, 1e2, true, false, null, "x"] } "#),
            .object([
                "a": .array([
                    .int(1), .int(-2), .int(0), .double(3.5), .double(100), .bool(true),
                    .bool(false), .null, .string("x")
                ])
            ]))
        XCTAssertEqual(
            parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u6f22\ud83d\ude42""#), .string("\"\\/\u{8}\u{C}\n\r\tAé漢🙂"))
        XCTAssertEqual(parse("{}"), .object([:]))
        XCTAssertEqual(parse("[]"), .array([]))
        XCTAssertEqual(parse("-0"), .int(0))
        XCTAssertEqual(parse("9223372036854775807"), .int(Int.max))
        XCTAssertEqual(parse("9223372036854775808"), .double(9223372036854775808))
        XCTAssertEqual(parse("\"é\""), .string("é"))
    }

    func testParserRefusesWhatJSONForbids() {
        let bad = [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "1e", "+1", "--1",
            "NaN", "Infinity", "tru", "nul", "\"unterminated", "\"tab\tinside\"", "\"nl\ninside\"", "\"\\x\"",
            "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"", "1 2", "{} {}", "[1] x",
            "{\"a\":1,\"a\":2}", "1e400", "'single'", "/* c */ 1"
        ]
        for text in bad {
            XCTAssertNil(parse(text), "accepted \(text.debugDescription)")
        }
    }

    func testParserBoundsNesting() {
        let limit = ControlLimits.maxNestingDepth
        XCTAssertNotNil(parse(String(repeating: "[", count: limit) + String(repeating: "]", count: limit)))
        XCTAssertNil(parse(String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)))
        XCTAssertNil(parse(String(repeating: "[", count: 100_000)))
    }

    /// Random JSON texts (from random values, re-serialized by Foundation) parse to what
    /// Foundation's decoder makes of them.
    func testParserAgreesWithFoundationOnRandomDocuments() throws {
        var rng = SplitMix64(seed: 7)
        func value(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 3 ? 5 : 7), using: &rng) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &rng))
            case 2: return .int(Int.random(in: Int.min...Int.max, using: &rng))
            case 3:
                return .string(
                    String(
                        (0..<Int.random(in: 0...12, using: &rng)).map { _ in
                            Character(UnicodeScalar(UInt8.random(in: 0...0x7E, using: &rng)))
                        }) + "é🙂")
            case 4: return .int(Int.random(in: -9...9, using: &rng))
            case 5: return .array((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(depth + 1) })
            default:
                var o: [String: JSONValue] = [:]
                for _ in 0..<Int.random(in: 0...4, using: &rng) {
                    o["k\(Int.random(in: 0...99, using: &rng))"] = value(depth + 1)
                }
                return .object(o)
            }
        }
        for _ in 0..<500 {
            let v = value(0)
            let text = try ControlJSON.encoder().encode(v)
            XCTAssertEqual(try JSONValue(parsing: Array(text)), try JSONDecoder().decode(JSONValue.self, from: text))
        }
    }
}
