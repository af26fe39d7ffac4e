import Foundation
import ParleyControlProtocol
import SeededRandom
import XCTest

/// The control protocol's pure parts: request parsing, line splitting, the typed
/// params/results/events, addresses and the default socket path.
final class ControlProtocolTests: XCTestCase {
    // MARK: - Parser: valid requests

    private func parse(_ text: String) -> Result<JSONRPCRequest, JSONRPCError> {
        ControlRequestParser.parse(line: Array(text.utf8))
    }

    private func expectRequest(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> JSONRPCRequest? {
        switch parse(text) {
        case .success(let request): return request
        case .failure(let error):
            XCTFail("rejected \(text): \(error)", file: file, line: line)
            return nil
        }
    }

    private func expectError(
        _ bytes: [UInt8], _ code: ControlErrorCode, file: StaticString = #filePath, line: UInt = #line
    ) {
        switch ControlRequestParser.parse(line: bytes) {
        case .success(let request):
            XCTFail("accepted \(String(decoding: bytes, as: UTF8.self)) as \(request)", file: file, line: line)
        case .failure(let error):
            XCTAssertEqual(
                error.code, code.rawValue, "\(String(decoding: bytes, as: UTF8.self)): \(error.message)",
                file: file, line: line)
        }
    }

    private func expectError(
        _ text: String, _ code: ControlErrorCode, file: StaticString = #filePath, line: UInt = #line
    ) {
        expectError(Array(text.utf8), code, file: file, line: line)
    }

    func testAcceptsRequestWithNumberIDAndParams() {
        let request = expectRequest(
            #"{"jsonrpc":"2.0","id":7,"method":"messages.send","params":{"to":"bob","body":"hi"}}"#)
        XCTAssertEqual(request?.id, .number(7))
        XCTAssertEqual(request?.method, "messages.send")
        XCTAssertEqual(request?.params, ["to": .string("bob"), "body": .string("hi")])
        XCTAssertEqual(request?.isNotification, false)
    }

    func testAcceptsStringIDWithoutParams() {
        let request = expectRequest(#"{"jsonrpc":"2.0","id":"abc","method":"node.status"}"#)
        XCTAssertEqual(request?.id, .string("abc"))
        XCTAssertNil(request?.params)
    }

    func testRequestWithoutIDIsANotification() {
        let request = expectRequest(#"{"jsonrpc":"2.0","method":"node.status","params":{}}"#)
        XCTAssertNil(request?.id)
        XCTAssertEqual(request?.isNotification, true)
        XCTAssertEqual(request?.params, [:])
    }

    func testAcceptsSurroundingWhitespaceAndCarriageReturn() {
        XCTAssertNotNil(expectRequest(" {\"jsonrpc\" : \"2.0\", \"id\": 1, \"method\": \"peers.list\"}\r"))
    }

    // MARK: - Parser: each invalid shape

    func testRejectsBytesThatAreNotJSONWithParseError() {
        expectError("", .parseError)
        expectError("   ", .parseError)
        expectError("{", .parseError)
        expectError(#"{"jsonrpc":"2.0","id":1,"method":"x""#, .parseError)
        expectError("hello", .parseError)
        expectError(#"{"jsonrpc":"2.0","id":1,"method":"x"} trailing"#, .parseError)
    }

    func testRejectsInvalidUTF8WithParseError() {
        var bytes = Array(#"{"jsonrpc":"2.0","id":1,"method":"node.status","params":{"x":""}}"#.utf8)
        bytes.insert(0xFF, at: bytes.count - 3)  // inside the string value
        expectError(bytes, .parseError)
        expectError([0xC3], .parseError)  // truncated two-byte sequence
    }

    func testRejectsDeepNestingWithParseError() {
        let deep =
            String(repeating: "[", count: ControlLimits.maxNestingDepth + 1)
            + String(repeating: "]", count: ControlLimits.maxNestingDepth + 1)
        expectError(deep, .parseError)
        let deepParams =
            #"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"#
            + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}}"
        expectError(deepParams, .parseError)
        // Exactly the limit is fine: object (1) + params (2) + 30 arrays = 32.
        let atLimit =
            #"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"#
            + String(repeating: "[", count: 30) + String(repeating: "]", count: 30) + "}}"
        XCTAssertNotNil(expectRequest(atLimit))
        // Brackets inside strings do not count.
        let quoted =
            #"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":""#
            + String(repeating: "[", count: 100) + #""}}"#
        XCTAssertNotNil(expectRequest(quoted))
    }

    func testRejectsBatchesWithInvalidRequest() {
        expectError(#"[{"jsonrpc":"2.0","id":1,"method":"node.status"}]"#, .invalidRequest)
        expectError("[]", .invalidRequest)
        if case .failure(let error) = parse("[]") {
            XCTAssertTrue(error.message.contains("batch"), error.message)
        }
    }

    func testRejectsNonObjectsWithInvalidRequest() {
        for text in ["1", #""x""#, "null", "true"] { expectError(text, .invalidRequest) }
    }

    func testRejectsWrongOrMissingVersion() {
        expectError(#"{"id":1,"method":"node.status"}"#, .invalidRequest)
        expectError(#"{"jsonrpc":"1.0","id":1,"method":"node.status"}"#, .invalidRequest)
        expectError(#"{"jsonrpc":2.0,"id":1,"method":"node.status"}"#, .invalidRequest)
    }

    func testRejectsMissingOrNonStringMethod() {
        expectError(#"{"jsonrpc":"2.0","id":1}"#, .invalidRequest)
        expectError(#"{"jsonrpc":"2.0","id":1,"method":5}"#, .invalidRequest)
        expectError(#"{"jsonrpc":"2.0","id":1,"method":null}"#, .invalidRequest)
    }

    func testRejectsIDsThatAreNotIntegersOrStrings() {
        for id in ["null", "1.5", "true", "{}", "[]", "1e300"] {
            expectError(#"{"jsonrpc":"2.0","id":\#(id),"method":"node.status"}"#, .invalidRequest)
        }
    }

    func testRejectsParamsByPositionWithInvalidParams() {
        expectError(#"{"jsonrpc":"2.0","id":1,"method":"messages.send","params":["bob","hi"]}"#, .invalidParams)
    }

    func testRejectsScalarParamsWithInvalidRequest() {
        for params in [#""x""#, "1", "null", "false"] {
            expectError(#"{"jsonrpc":"2.0","id":1,"method":"node.status","params":\#(params)}"#, .invalidRequest)
        }
    }

    func testRejectsUnknownMembers() {
        expectError(#"{"jsonrpc":"2.0","id":1,"method":"node.status","param":{}}"#, .invalidRequest)
    }

    func testRejectedLineStillYieldsItsIDWhenReadable() {
        let line = Array(#"{"jsonrpc":"2.0","id":"q1","method":"x","params":[1]}"#.utf8)
        guard case .failure = ControlRequestParser.parse(line: line) else { return XCTFail("accepted") }
        XCTAssertEqual(ControlRequestParser.requestID(inRejectedLine: line), .string("q1"))
        XCTAssertNil(ControlRequestParser.requestID(inRejectedLine: Array("{nope".utf8)))
        XCTAssertNil(ControlRequestParser.requestID(inRejectedLine: Array(#"{"id":null}"#.utf8)))
    }

    func testErrorMessagesDoNotEchoLongInput() {
        let long = String(repeating: "m", count: 10_000)
        let error = JSONRPCError.methodNotFound(long)
        XCTAssertEqual(error.code, ControlErrorCode.methodNotFound.rawValue)
        XCTAssertLessThan(error.message.count, 200)
    }

    // MARK: - Parser: garbage never crashes

    private static let seeds: [String] = [
        #"{"jsonrpc":"2.0","id":1,"method":"messages.send","params":{"to":"bob","body":"hi \"there\" \\ \u00e9","wait":true,"timeoutMs":500}}"#,
        #"{"jsonrpc":"2.0","id":"x","method":"messages.list","params":{"peer":"abcd-efgh","after":3,"limit":10}}"#,
        #"{"jsonrpc":"2.0","method":"node.status"}"#,
        #"[{"jsonrpc":"2.0","id":1,"method":"a"},{"b":[1,2.5,-3e4,null,false]}]"#
    ]

    private static let structural = Array("{}[]\",:\\0123456789.eE-+ntrufals \u{0}".utf8)

    private func checkParserSurvives(_ bytes: [UInt8]) {
        switch ControlRequestParser.parse(line: bytes) {
        case .success(let request):
            // Whatever is accepted must re-encode to a line that parses to the same request.
            guard let line = try? ControlJSON.line(request) else { return XCTFail("cannot re-encode \(request)") }
            XCTAssertEqual(try? ControlRequestParser.parse(line: Array(line.dropLast())).get(), request)
        case .failure(let error):
            XCTAssertTrue(
                [ControlErrorCode.parseError, .invalidRequest, .invalidParams].map(\.rawValue).contains(error.code),
                "unexpected code \(error.code)")
        }
        _ = ControlRequestParser.requestID(inRejectedLine: bytes)
        _ = ControlServerMessage.parse(line: bytes)
    }

    func testParserSurvivesRandomBytes() {
        var rng = SplitMix64(seed: 0x5EED_0001)
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...200, using: &rng)
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            checkParserSurvives(bytes)
        }
    }

    func testParserSurvivesMutatedRequests() {
        var rng = SplitMix64(seed: 0x5EED_0002)
        var accepted = 0
        for _ in 0..<3_000 {
            var bytes = Array(Self.seeds.randomElement(using: &rng)!.utf8)  // seeds is non-empty
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let position = Int.random(in: 0...bytes.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0 where position < bytes.count: bytes[position] = UInt8.random(in: 0...255, using: &rng)
                case 1: bytes.insert(Self.structural.randomElement(using: &rng)!, at: position)  // non-empty
                case 2 where position < bytes.count: bytes.remove(at: position)
                default: bytes = Array(bytes.prefix(position))
                }
            }
            if case .success = ControlRequestParser.parse(line: bytes) { accepted += 1 }
            checkParserSurvives(bytes)
        }
        // The corpus must exercise both paths, or the loop proves little.
        XCTAssertGreaterThan(accepted, 0)
        XCTAssertLessThan(accepted, 3_000)
    }

    func testParserSurvivesHugePathologicalLines() {
        let brackets = [UInt8](repeating: UInt8(ascii: "["), count: ControlLimits.maxLineBytes)
        expectError(brackets, .parseError)
        let objects = Array(String(repeating: #"{"a":"#, count: 50_000).utf8)
        expectError(objects, .parseError)
        let quotes = [UInt8](repeating: UInt8(ascii: "\""), count: 100_001)
        expectError(quotes, .parseError)
    }

    // MARK: - LineBuffer

    private func drain(_ buffer: inout LineBuffer) throws -> [String] {
        var lines: [String] = []
        while let line = try buffer.popLine() { lines.append(String(decoding: line, as: UTF8.self)) }
        return lines
    }

    func testLineBufferSplitsLinesAcrossChunks() throws {
        var buffer = LineBuffer(maxLineBytes: 100)
        let stream = Array("first\nsecond line\n\nthird".utf8)
        var lines: [String] = []
        for byte in stream {  // one byte at a time: the worst fragmentation
            buffer.append([byte])
            lines += try drain(&buffer)
        }
        XCTAssertEqual(lines, ["first", "second line", ""])
        XCTAssertEqual(buffer.partialLineByteCount, 5)
        buffer.append(Array("\n".utf8))
        XCTAssertEqual(try drain(&buffer), ["third"])
        XCTAssertEqual(buffer.partialLineByteCount, 0)
    }

    func testLineBufferReturnsSeveralLinesFromOneChunk() throws {
        var buffer = LineBuffer(maxLineBytes: 100)
        buffer.append(Array("a\nbb\nccc\ndd".utf8))
        XCTAssertEqual(try drain(&buffer), ["a", "bb", "ccc"])
        buffer.append(ArraySlice(Array("d\n".utf8)))  // any Collection of bytes
        XCTAssertEqual(try drain(&buffer), ["ddd"])
    }

    func testLineBufferAcceptsALineOfExactlyTheLimit() throws {
        var buffer = LineBuffer(maxLineBytes: 8)
        buffer.append(Array("1234".utf8))
        buffer.append(Array("5678\n".utf8))
        XCTAssertEqual(try drain(&buffer), ["12345678"])
        XCTAssertFalse(buffer.isOverflowed)
    }

    func testLineBufferRejectsACompleteLineOverTheLimitAfterEarlierLines() throws {
        var buffer = LineBuffer(maxLineBytes: 8)
        buffer.append(Array("ok\n123456789\nlater\n".utf8))
        XCTAssertEqual(try buffer.popLine().map { String(decoding: $0, as: UTF8.self) }, "ok")
        XCTAssertThrowsError(try buffer.popLine()) { error in
            XCTAssertEqual(error as? LineBufferError, .lineTooLong(maxBytes: 8))
        }
    }

    func testLineBufferRejectsAPartialLineOverTheLimitAndStaysPoisoned() throws {
        var buffer = LineBuffer(maxLineBytes: 8)
        buffer.append(Array("12345".utf8))
        XCTAssertNil(try buffer.popLine())
        buffer.append(Array("6789".utf8))  // 9 bytes, no newline yet
        XCTAssertTrue(buffer.isOverflowed)
        XCTAssertEqual(buffer.partialLineByteCount, 0, "an overflowing line is not kept")
        XCTAssertThrowsError(try buffer.popLine())
        buffer.append(Array("\nfine\n".utf8))  // dropped: the connection is to be closed
        XCTAssertThrowsError(try buffer.popLine())
    }

    func testLineBufferDefaultLimitIsTheProtocolLimit() {
        XCTAssertEqual(LineBuffer().maxLineBytes, ControlLimits.maxLineBytes)
        XCTAssertEqual(ControlLimits.maxLineBytes, 1_048_576)
    }

    // MARK: - Error codes

    func testErrorCodesHaveTheirDocumentedValues() {
        let expected: [ControlErrorCode: Int] = [
            .parseError: -32700, .invalidRequest: -32600, .methodNotFound: -32601, .invalidParams: -32602,
            .internalError: -32603, .peerNotFound: -32001, .peerAmbiguous: -32002, .peerNotTrusted: -32003,
            .bodyTooLarge: -32004, .storageFailed: -32005, .notPermitted: -32006, .lineTooLong: -32007,
            .timeout: -32008, .fingerprintMismatch: -32009, .invalidAddress: -32010, .tooManyClients: -32011,
            .subscriberTooSlow: -32012, .eventsExpired: -32020, .roomNotFound: -32021, .roomAmbiguous: -32022,
            .messageNotFound: -32023,
            .connectFailed: -32030, .transferNotFound: -32040, .fileNotSendable: -32041, .transferState: -32042
        ]
        XCTAssertEqual(expected.count, ControlErrorCode.allCases.count)
        for code in ControlErrorCode.allCases { XCTAssertEqual(code.rawValue, expected[code], "\(code)") }
    }

    func testErrorDataPayloadsRoundTrip() throws {
        let ambiguous = JSONRPCError.peerAmbiguous(
            "bo",
            candidates: [
                PeerCandidate(name: "bob", fingerprint: "aaaa-bbbb"), PeerCandidate(name: "bo", fingerprint: "cccc")
            ])
        let response = JSONRPCResponse(id: .number(3), error: ambiguous)
        let line = try ControlJSON.line(response)
        guard case .success(.response(let decoded)) = ControlServerMessage.parse(line: Array(line.dropLast())) else {
            return XCTFail("response did not parse")
        }
        XCTAssertEqual(decoded, response)
        XCTAssertEqual(decoded.error?.knownCode, .peerAmbiguous)
        XCTAssertEqual(decoded.error?.payload(as: PeerAmbiguousData.self)?.candidates.map(\.name), ["bob", "bo"])

        let timeout = JSONRPCError.sendTimeout(id: "m-42", timeoutMs: 500)
        XCTAssertEqual(timeout.code, ControlErrorCode.timeout.rawValue)
        XCTAssertEqual(timeout.payload(as: SendTimeoutData.self), SendTimeoutData(id: "m-42"))
        XCTAssertEqual(
            JSONRPCError.bodyTooLarge(bytes: 70_000, maxBytes: 65_536).payload(as: BodyTooLargeData.self)?.maxBytes,
            65_536)
        let expired = JSONRPCError.eventsExpired(since: 3, prunedThrough: 10, lastEventId: 99)
        XCTAssertEqual(expired.knownCode, .eventsExpired)
        XCTAssertEqual(
            expired.payload(as: EventsExpiredData.self), EventsExpiredData(prunedThrough: 10, lastEventId: 99))
    }

    func testParseErrorResponseHasNullID() throws {
        let line = try ControlJSON.line(JSONRPCResponse(id: nil, error: .parseError("x")))
        let text = String(decoding: line, as: UTF8.self)
        XCTAssertTrue(text.contains(#""id":null"#), text)
        XCTAssertTrue(text.hasSuffix("}\n"))
        XCTAssertEqual(line.filter { $0 == UInt8(ascii: "\n") }.count, 1)
    }

    // MARK: - JSONValue

    func testJSONValueKeepsKindsApart() throws {
        let decoded = try JSONDecoder().decode(
            JSONValue.self, from: Data(#"{"b":true,"i":1,"d":1.5,"s":"1","n":null,"a":[false,0]}"#.utf8))
        XCTAssertEqual(
            decoded,
            .object([
                "b": .bool(true), "i": .int(1), "d": .double(1.5), "s": .string("1"), "n": .null,
                "a": .array([.bool(false), .int(0)])
            ]))
        XCTAssertEqual(try JSONValue(encoding: decoded), decoded)
    }

    // MARK: - Typed params, results and events

    private static let peer = PeerInfo(
        name: "bob", host: "bobs-laptop", fingerprint: "abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567",
        identityKey: String(repeating: "ab", count: 32), online: true, addresses: ["192.168.1.20:7777"],
        trust: .pending, safetyNumber: "12345 67890 12345 67890 12345 67890 12345 67890 12345 67890 12345 67890",
        lastSeen: nil, queued: 2, nickname: "Bob (lab)",
        nameClash: NameClashInfo(
            kind: .sameName,
            with: [
                PeerCandidate(name: "bob", fingerprint: "zzzz-yyyy-xxxx-wwww-vvvv-uuuu-tttt-ssss", trust: .verified)
            ]))

    private static let message = MessageInfo(
        id: "0123abcd", from: "aaaa-bbbb", fromName: "alice", to: "abcd-efgh", toName: "bob", direction: .outgoing,
        sequence: 9, createdAt: 1_700_000_000_000, body: "hi ✓ \"quoted\"\nsecond line", state: .queued,
        deliveredAt: nil, cursor: 1234)

    /// A params value survives the trip through a request line and `decodeParams`, and its
    /// encoded members are exactly the declared `fieldNames`.
    private func checkParams<P: ControlCallParams>(_ params: P, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let request = try JSONRPCRequest(id: .number(1), call: params)
        XCTAssertEqual(request.method, P.method, file: file, line: line)
        XCTAssertTrue(ControlMethod.all.contains(P.method), file: file, line: line)
        XCTAssertEqual(
            Set((request.params ?? [:]).keys), Set(P.fieldNames), "fieldNames of \(P.self)", file: file, line: line)
        let bytes = try ControlJSON.line(request)
        let parsed = try ControlRequestParser.parse(line: Array(bytes.dropLast())).get()
        XCTAssertEqual(try parsed.decodeParams(P.self), params, file: file, line: line)
    }

    /// A result survives the trip through a response line.
    private func checkResult<R: Codable & Hashable>(_ result: R, file: StaticString = #filePath, line: UInt = #line)
        throws
    {
        let bytes = try ControlJSON.line(JSONRPCResponse.success(id: .string("r"), result: result))
        guard case .success(.response(let response)) = ControlServerMessage.parse(line: Array(bytes.dropLast())) else {
            return XCTFail("response did not parse", file: file, line: line)
        }
        XCTAssertEqual(response.id, .string("r"), file: file, line: line)
        XCTAssertEqual(try response.decodeResult(R.self), result, file: file, line: line)
    }

    /// An event survives the trip through a notification line and `ControlEventPayload`.
    private func checkEvent<E: ControlEventParams>(
        _ event: E, _ extract: (ControlEventPayload) -> E?, file: StaticString = #filePath, line: UInt = #line
    ) throws {
        XCTAssertTrue(ControlEvent.all.contains(E.method), file: file, line: line)
        let bytes = try ControlJSON.line(JSONRPCNotification(event: event))
        guard case .success(.notification(let notification)) = ControlServerMessage.parse(line: Array(bytes.dropLast()))
        else {
            return XCTFail("notification did not parse", file: file, line: line)
        }
        XCTAssertEqual(notification.method, E.method, file: file, line: line)
        XCTAssertEqual(extract(try ControlEventPayload(notification)), event, file: file, line: line)
    }

    func testEveryParamsTypeRoundTrips() throws {
        try checkParams(NodeStatusParams())
        try checkParams(NodeWhoamiParams())
        try checkParams(PeersListParams())
        try checkParams(PeersConnectParams(address: "[fe80::1%eth0]:7777", wait: true, timeoutMs: 2500))
        try checkParams(MessagesSearchParams(query: "café 东京", peer: "#room", limit: 5))
        try checkParams(MessagesSendParams(to: "bob", body: "hello\n\"you\"", wait: true, timeoutMs: 1500))
        try checkParams(MessagesListParams(peer: "abcd", after: 10, before: 99, limit: 1000))
        try checkParams(MessagesSubscribeParams(peer: "bob", since: 41))
        try checkParams(MessagesMarkReadParams(peer: "bob", upTo: 1234))
        try checkParams(TrustVerifyParams(peer: "bob", fingerprint: "ABCD-efgh"))
        try checkParams(TrustShowParams(peer: "bob"))
        try checkParams(TrustReplaceParams(peer: "bob", newFingerprint: "zzzz-yyyy", safetyNumber: "12345 67890"))
        try checkParams(TrustAcceptParams(peer: "bob"))
        try checkParams(TrustBlockParams(peer: "bob"))
        try checkParams(TrustUnblockParams(peer: "bob"))
        try checkParams(TrustForgetParams(peer: "bob"))
        try checkParams(PeersNicknameParams(peer: "bob", nickname: "Bob (lab)"))
        try checkParams(PeersNicknameParams(peer: "bob", nickname: nil))
    }

    func testOptionalParamsMayBeOmitted() throws {
        let send = try JSONRPCRequest(
            id: .number(1), method: "messages.send", params: ["to": .string("b"), "body": .string("x")]
        )
        .decodeParams(MessagesSendParams.self)
        XCTAssertFalse(send.effectiveWait)
        XCTAssertEqual(send.effectiveTimeoutMs, ControlLimits.defaultSendWaitMilliseconds)
        let list = try JSONRPCRequest(id: .number(1), method: "messages.list").decodeParams(MessagesListParams.self)
        XCTAssertEqual(list, MessagesListParams())
        XCTAssertEqual(list.effectiveLimit, 50)
    }

    func testEveryResultTypeRoundTrips() throws {
        try checkResult(
            NodeStatusResult(
                version: "0.1.0", name: "alice", fingerprint: "aaaa", listen: ["0.0.0.0:7777", "[::]:7777"],
                peersOnline: 1,
                peersKnown: 3, queued: 2, uptimeSeconds: 3600, mdns: .unavailable))
        try checkResult(
            NodeWhoamiResult(
                name: "alice", host: "h", fingerprint: "aaaa", identityKey: "00ff", noiseKey: "ff00", card: "0102",
                cardSequence: 4))
        try checkResult(PeersListResult(peers: [Self.peer]))
        try checkResult(PeersConnectResult(address: "10.0.0.2:7777", status: .dialing))
        try checkResult(MessagesSendResult(message: Self.message))
        try checkResult(MessagesListResult(messages: [Self.message], nextCursor: 1234))
        try checkResult(MessagesListResult(messages: [], nextCursor: nil))
        try checkResult(MessagesSubscribeResult(subscribed: true))
        try checkResult(MessagesSubscribeResult(subscribed: true, lastEventId: 77))
        try checkResult(MessagesMarkReadResult(marked: 3, unread: 1))
        var read = Self.message
        read.readAt = 1_700_000_000_500
        try checkResult(MessagesListResult(messages: [read], nextCursor: nil))
        var unread = Self.peer
        unread.unread = 12
        try checkResult(PeersListResult(peers: [unread]))
        try checkResult(TrustVerifyResult(peer: Self.peer))
        try checkResult(TrustReplaceResult(peer: Self.peer, retargeted: 3))
        try checkResult(TrustPeerResult(peer: Self.peer))
        try checkResult(TrustForgetResult(fingerprint: "abcd"))
        try checkResult(
            TrustShowResult(
                peer: Self.peer, yourFingerprint: "aaaa", qrText: "parley:a:b:1",
                previousKeys: [PreviousKeyInfo(fingerprint: "cccc", name: "bob", firstSeen: 1, lastSeen: 2)]))
    }

    func testEveryEventTypeRoundTrips() throws {
        try checkEvent(MessageReceivedEvent(message: Self.message)) {
            if case .messageReceived(let e) = $0 { e } else { nil }
        }
        try checkEvent(MessageDeliveredEvent(id: "m1", to: "abcd", deliveredAt: 5)) {
            if case .messageDelivered(let e) = $0 { e } else { nil }
        }
        try checkEvent(MessageReadEvent(id: "m1", to: "abcd", readAt: 6)) {
            if case .messageRead(let e) = $0 { e } else { nil }
        }
        try checkEvent(PeerOnlineEvent(peer: Self.peer)) { if case .peerOnline(let e) = $0 { e } else { nil } }
        try checkEvent(PeerOfflineEvent(peer: Self.peer)) { if case .peerOffline(let e) = $0 { e } else { nil } }
        try checkEvent(
            PeerNewEvent(
                name: "bob", fingerprint: "bbbb", trust: .pinned, address: nil, safetyNumber: "1 2",
                nameClash: Self.peer.nameClash)
        ) {
            if case .peerNew(let e) = $0 { e } else { nil }
        }
        try checkEvent(SubscriptionClosedEvent.tooSlow()) { if case .subscriptionClosed(let e) = $0 { e } else { nil } }
        XCTAssertEqual(SubscriptionClosedEvent.tooSlow().code, ControlErrorCode.subscriberTooSlow.rawValue)
    }

    func testEventIDIsReadFromParamsAndIgnoredByTypedEvents() throws {
        let line = #"{"jsonrpc":"2.0","method":"message.read","params":{"eventId":17,"id":"m","to":"t","readAt":3}}"#
        guard case .success(.notification(let n)) = ControlServerMessage.parse(line: Array(line.utf8)) else {
            return XCTFail("did not parse")
        }
        XCTAssertEqual(n.eventID, 17)
        XCTAssertEqual(try ControlEventPayload(n), .messageRead(MessageReadEvent(id: "m", to: "t", readAt: 3)))
        XCTAssertNil(JSONRPCNotification(method: "subscription.closed", params: [:]).eventID)
    }

    func testSinceAndUpToMustNotBeNegative() {
        XCTAssertEqual(paramsError(MessagesSubscribeParams.self, ["since": .int(-1)])?.knownCode, .invalidParams)
        XCTAssertEqual(
            paramsError(MessagesMarkReadParams.self, ["peer": .string("bob"), "upTo": .int(-5)])?.knownCode,
            .invalidParams)
        XCTAssertEqual(paramsError(MessagesMarkReadParams.self, [:])?.knownCode, .invalidParams, "peer is required")
    }

    func testUnknownEventsAreKeptNotFatal() throws {
        let notification = JSONRPCNotification(method: "peer.renamed", params: ["x": .int(1)])
        XCTAssertEqual(try ControlEventPayload(notification), .unknown(notification))
    }

    func testAbsentOptionalResultFieldsAreEncodedAsNull() throws {
        let text = String(decoding: try ControlJSON.line(PeersListResult(peers: [Self.peer])), as: UTF8.self)
        XCTAssertTrue(text.contains(#""lastSeen":null"#), text)
        let messageText = String(decoding: try ControlJSON.line(Self.message), as: UTF8.self)
        XCTAssertTrue(messageText.contains(#""deliveredAt":null"#), messageText)
        XCTAssertTrue(messageText.contains(#""readAt":null"#), messageText)
        XCTAssertTrue(messageText.contains(#""direction":"out""#), messageText)
        let list = String(
            decoding: try ControlJSON.line(MessagesListResult(messages: [], nextCursor: nil)), as: UTF8.self)
        XCTAssertEqual(list, "{\"messages\":[],\"newerCursor\":null,\"nextCursor\":null,\"olderCursor\":null}\n")
    }

    // MARK: - Params validation

    private func paramsError<P: ControlCallParams>(
        _ type: P.Type, _ params: [String: JSONValue], file: StaticString = #filePath, line: UInt = #line
    ) -> JSONRPCError? {
        do {
            _ = try JSONRPCRequest(id: .number(1), method: P.method, params: params).decodeParams(P.self)
            XCTFail("accepted \(params)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func testParamsDecodingNamesTheProblem() {
        let missing = paramsError(MessagesSendParams.self, ["to": .string("bob")])
        XCTAssertEqual(missing?.knownCode, .invalidParams)
        XCTAssertEqual(missing?.message, #"invalid params: missing field "body""#)

        let wrongType = paramsError(MessagesSendParams.self, ["to": .string("bob"), "body": .int(3)])
        XCTAssertEqual(wrongType?.knownCode, .invalidParams)
        XCTAssertEqual(wrongType?.message, #"invalid params: field "body" must be a string"#)

        let unknown = paramsError(
            MessagesSendParams.self, ["to": .string("bob"), "body": .string("x"), "wiat": .bool(true)])
        XCTAssertEqual(unknown?.knownCode, .invalidParams)
        XCTAssertTrue(unknown?.message.contains("wiat") ?? false)

        XCTAssertEqual(paramsError(NodeStatusParams.self, ["x": .int(1)])?.knownCode, .invalidParams)
    }

    func testParamsRangesAreChecked() {
        let base: [String: JSONValue] = ["to": .string("bob"), "body": .string("x")]
        for bad in [0, -1, ControlLimits.maxSendWaitMilliseconds + 1] {
            var p = base
            p["timeoutMs"] = .int(bad)
            XCTAssertEqual(paramsError(MessagesSendParams.self, p)?.knownCode, .invalidParams, "timeoutMs \(bad)")
        }
        XCTAssertEqual(
            paramsError(MessagesSendParams.self, ["to": .string(""), "body": .string("x")])?.knownCode, .invalidParams)
        XCTAssertEqual(
            paramsError(MessagesSendParams.self, ["to": .string("b"), "body": .string("")])?.knownCode, .invalidParams)
        for bad in [0, 1001] {
            XCTAssertEqual(paramsError(MessagesListParams.self, ["limit": .int(bad)])?.knownCode, .invalidParams)
        }
        XCTAssertEqual(paramsError(MessagesListParams.self, ["after": .int(-1)])?.knownCode, .invalidParams)
        let longSelector = String(repeating: "x", count: ControlLimits.maxPeerSelectorBytes + 1)
        XCTAssertEqual(
            paramsError(TrustReplaceParams.self, ["peer": .string(longSelector), "newFingerprint": .string("a")])?
                .knownCode, .invalidParams)
        // A safety number typed by a person is 60 digits and separators: bounded.
        let longNumber = String(repeating: "1", count: TrustReplaceParams.maxSafetyNumberBytes + 1)
        XCTAssertEqual(
            paramsError(
                TrustReplaceParams.self,
                ["peer": .string("a"), "newFingerprint": .string("b"), "safetyNumber": .string(longNumber)])?.knownCode,
            .invalidParams)
        XCTAssertEqual(
            paramsError(PeersNicknameParams.self, ["peer": .string("b"), "nickname": .string("a\u{1}b")])?.knownCode,
            .invalidParams)
        XCTAssertEqual(paramsError(PeersConnectParams.self, ["address": .string("nohost")])?.knownCode, .invalidAddress)
        // Port 0 means "any" for a listener, but nobody can be dialled there.
        XCTAssertEqual(paramsError(PeersConnectParams.self, ["address": .string("host:0")])?.knownCode, .invalidAddress)
    }

    // MARK: - Addresses

    func testHostPortParsing() {
        XCTAssertEqual(HostPort("192.168.1.20:7777").map { "\($0.host)|\($0.port)" }, "192.168.1.20|7777")
        XCTAssertEqual(HostPort("bob.local:1").map { "\($0.host)|\($0.port)" }, "bob.local|1")
        XCTAssertEqual(HostPort("[fe80::1%eth0]:65535").map { "\($0.host)|\($0.port)" }, "fe80::1%eth0|65535")
        XCTAssertEqual(HostPort("[::1]:7777")?.description, "[::1]:7777")
        for bad in [
            "", "host", "host:", ":7777", "host:65536", "host:77a", "fe80::1:7777", "[::1]7777",
            "[host]:7777", "ho st:7777", "host:+80", "host:٣", String(repeating: "a", count: 300) + ":1"
        ] {
            XCTAssertNil(HostPort(bad), bad)
        }
    }

    // MARK: - Socket path

    func testSocketPathPrefersSystemdRuntimeDirectory() {
        let env = ["RUNTIME_DIRECTORY": "/run/parleyd", "XDG_RUNTIME_DIR": "/run/user/1000", "HOME": "/home/a"]
        XCTAssertEqual(ControlSocketPath.default(environment: env), "/run/parleyd/control.sock")
        XCTAssertEqual(
            ControlSocketPath.default(environment: ["RUNTIME_DIRECTORY": "/run/parleyd:/run/other"]),
            "/run/parleyd/control.sock")
    }

    func testSocketPathUsesXDGRuntimeDirNext() {
        let env = ["XDG_RUNTIME_DIR": "/run/user/1000/", "STATE_DIRECTORY": "/var/lib/parleyd", "HOME": "/home/a"]
        XCTAssertEqual(ControlSocketPath.default(environment: env), "/run/user/1000/parley/control.sock")
    }

    func testSocketPathFallsBackToTheStateDirectory() {
        XCTAssertEqual(
            ControlSocketPath.default(environment: ["STATE_DIRECTORY": "/var/lib/parleyd", "XDG_STATE_HOME": "/x"]),
            "/var/lib/parleyd/control.sock")
        XCTAssertEqual(
            ControlSocketPath.default(environment: ["XDG_STATE_HOME": "/home/a/.state", "HOME": "/home/a"]),
            "/home/a/.state/parley/control.sock")
        XCTAssertEqual(
            ControlSocketPath.default(environment: ["HOME": "/home/a"]), "/home/a/.local/state/parley/control.sock")
    }

    func testEmptyOrRelativeVariablesCountAsUnset() {
        let env = [
            "RUNTIME_DIRECTORY": "", "XDG_RUNTIME_DIR": "relative/dir", "STATE_DIRECTORY": "",
            "XDG_STATE_HOME": "", "HOME": "/home/a"
        ]
        XCTAssertEqual(ControlSocketPath.default(environment: env), "/home/a/.local/state/parley/control.sock")
    }

    func testDefaultStateDirectory() {
        XCTAssertEqual(
            ControlSocketPath.defaultStateDirectory(environment: ["STATE_DIRECTORY": "/var/lib/parleyd"]),
            "/var/lib/parleyd")
        XCTAssertEqual(
            ControlSocketPath.defaultStateDirectory(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]), "/s/parley")
        XCTAssertEqual(ControlSocketPath.defaultStateDirectory(environment: ["HOME": "/h"]), "/h/.local/state/parley")
        // Without HOME the answer is still an absolute path ending in the Parley directory.
        let noHome = ControlSocketPath.defaultStateDirectory(environment: [:])
        XCTAssertTrue(noHome.hasPrefix("/") && noHome.hasSuffix("/.local/state/parley"), noHome)
    }

    /// The daemon's fast path must produce exactly the bytes of the generic path.
    func testTypedSuccessEncodesLikeTheGenericResponse() throws {
        let info = MessageInfo(
            id: String(repeating: "a", count: 32), from: "f", fromName: "alice \"x\" é",
            to: "t", toName: "bob", direction: .outgoing, sequence: 7, createdAt: 1,
            body: "hi\nthere / ✓", state: .queued, deliveredAt: nil, cursor: 3)
        let result = MessagesSendResult(message: info)
        let encoder = ControlJSON.encoder()
        for id in [JSONRPCID.number(42), .string("x-1"), nil] as [JSONRPCID?] {
            let generic = try encoder.encode(JSONRPCResponse.success(id: id, result: result))
            let typed = try encoder.encode(JSONRPCTypedSuccess(id: id, result: result))
            XCTAssertEqual(String(decoding: typed, as: UTF8.self), String(decoding: generic, as: UTF8.self))
        }
    }
}
