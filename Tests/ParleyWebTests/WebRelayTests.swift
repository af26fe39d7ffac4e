import ParleyControlProtocol
import XCTest

@testable import ParleyWebCore

final class WebRelayTests: XCTestCase {
    func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func answer(_ decision: WebRelayDecision) -> JSONRPCResponse? {
        guard case .answer(let line) = decision else { return nil }
        return try? ControlJSON.decoder().decode(JSONRPCResponse.self, from: Data(line))
    }

    func testAnAllowedRequestIsForwardedByteForByte() {
        let line = bytes(#"{"jsonrpc":"2.0","id":7,"method":"messages.send","params":{"to":"bob","body":"hi"}}"#)
        XCTAssertEqual(WebRelay.decide(message: line, rateAllows: true), .forward(line))
    }

    func testTheConfirmationWindowReplacesAKeyOnlyWithATypedSafetyNumber() {
        func decide(_ params: String, _ method: String = "trust.replace", in window: WebWindow = .confirm)
            -> WebRelayDecision
        {
            WebRelay.decide(
                message: bytes(#"{"jsonrpc":"2.0","id":1,"method":"\#(method)","params":\#(params)}"#),
                rateAllows: true,
                window: window)
        }
        let typed = #"{"peer":"a","newFingerprint":"b","safetyNumber":"12345 67890"}"#
        guard case .forward = decide(typed) else { return XCTFail("the ceremony's request is forwarded") }
        for missing in [
            #"{"peer":"a","newFingerprint":"b"}"#, #"{"peer":"a","newFingerprint":"b","safetyNumber":""}"#,
            #"{"peer":"a","newFingerprint":"b","safetyNumber":null}"#,
            #"{"peer":"a","newFingerprint":"b","safetyNumber":"  - "}"#,
            #"{"peer":"a","newFingerprint":"b","safetyNumber":12345}"#
        ] {
            XCTAssertEqual(answer(decide(missing))?.error?.code, ControlErrorCode.invalidParams.rawValue, missing)
        }
        guard case .forward = decide(#"{"address":"10.0.0.5:7777","wait":true}"#, "peers.connect") else {
            return XCTFail("the person's typed address is dialled")
        }
        // The page itself gets neither, whatever it sends; the window gets nothing of the chat.
        XCTAssertEqual(answer(decide(typed, in: .page))?.error?.code, ControlErrorCode.notPermitted.rawValue)
        XCTAssertEqual(
            answer(decide(#"{"address":"10.0.0.5:7777"}"#, "peers.connect", in: .page))?.error?.code,
            ControlErrorCode.notPermitted.rawValue)
        // What vouches for a key is the window's, not the page's.
        for method in ["trust.verify", "trust.accept", "trust.unblock"] {
            guard case .forward = decide(#"{"peer":"a","fingerprint":"b"}"#, method) else { return XCTFail(method) }
            XCTAssertEqual(
                answer(decide(#"{"peer":"a"}"#, method, in: .page))?.error?.code, ControlErrorCode.notPermitted.rawValue,
                method)
        }
        guard case .forward = decide(#"{"peer":"a"}"#, "trust.block", in: .page) else { return XCTFail("block") }
        for method in ["messages.send", "messages.list", "node.rotate_key", "trust.forget", "files.list"] {
            XCTAssertEqual(
                answer(decide("{}", method))?.error?.code, ControlErrorCode.notPermitted.rawValue, method)
        }
    }

    func testDangerousMethodsAreAnsweredHereNotForwarded() {
        for method in [
            "node.rotate_key", "trust.forget", "messages.forget", "trust.replace", "peers.connect", "files.save_as"
        ] {
            let line = bytes(#"{"jsonrpc":"2.0","id":"x","method":"\#(method)"}"#)
            guard let response = answer(WebRelay.decide(message: line, rateAllows: true)) else {
                return XCTFail("\(method) must not be forwarded")
            }
            XCTAssertEqual(response.id, .string("x"))
            XCTAssertEqual(response.error?.code, ControlErrorCode.notPermitted.rawValue)
            XCTAssertTrue(response.error!.message.contains("terminal"), response.error!.message)
        }
    }

    func testALineFeedCannotSmuggleASecondRequest() {
        // One WebSocket message, two control lines: the first allowed, the second not.
        let smuggled = bytes(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.status\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"node.rotate_key\"}"
        )
        XCTAssertNotNil(answer(WebRelay.decide(message: smuggled, rateAllows: true)))
        // JSON whitespace line feeds inside one object would also split it at the daemon.
        let spread = bytes("{\"jsonrpc\":\"2.0\",\n\"id\":1,\"method\":\"node.status\"}")
        XCTAssertNotNil(answer(WebRelay.decide(message: spread, rateAllows: true)))
        let carriage = bytes("{\"jsonrpc\":\"2.0\",\r\"id\":1,\"method\":\"node.status\"}")
        XCTAssertNotNil(answer(WebRelay.decide(message: carriage, rateAllows: true)))
        // An escaped newline inside a string is fine: it is not a raw byte 0x0A.
        let escaped = bytes(#"{"jsonrpc":"2.0","id":1,"method":"messages.send","params":{"to":"b","body":"a\nb"}}"#)
        XCTAssertEqual(WebRelay.decide(message: escaped, rateAllows: true), .forward(escaped))
    }

    func testDuplicateMethodMembersAreRefusedLikeTheDaemonDoes() {
        let line = bytes(#"{"jsonrpc":"2.0","id":1,"method":"node.status","method":"node.rotate_key"}"#)
        XCTAssertEqual(
            answer(WebRelay.decide(message: line, rateAllows: true))?.error?.code, ControlErrorCode.parseError.rawValue)
    }

    func testMalformedMessagesGetTheControlProtocolsErrors() {
        XCTAssertEqual(answer(WebRelay.decide(message: bytes("nonsense"), rateAllows: true))?.error?.code, -32700)
        XCTAssertEqual(answer(WebRelay.decide(message: bytes("[]"), rateAllows: true))?.error?.code, -32600)
        XCTAssertEqual(answer(WebRelay.decide(message: [0xff, 0xfe], rateAllows: true))?.error?.code, -32700)
        let noMethod = answer(WebRelay.decide(message: bytes(#"{"jsonrpc":"2.0","id":3}"#), rateAllows: true))
        XCTAssertEqual(noMethod?.error?.code, -32600)
        XCTAssertEqual(noMethod?.id, .number(3))
    }

    func testOversizedMessagesAreRefused() {
        var big = bytes(#"{"jsonrpc":"2.0","id":1,"method":"messages.send","params":{"to":"b","body":""#)
        big += [UInt8](repeating: 0x61, count: WebLimits.maxWebSocketMessageBytes)
        big += bytes(#""}}"#)
        XCTAssertEqual(
            answer(WebRelay.decide(message: big, rateAllows: true))?.error?.code, ControlErrorCode.lineTooLong.rawValue)
    }

    func testOverTheRateAnAllowedRequestIsAnsweredHere() {
        let line = bytes(#"{"jsonrpc":"2.0","id":9,"method":"peers.list"}"#)
        let response = answer(WebRelay.decide(message: line, rateAllows: false))
        XCTAssertEqual(response?.id, .number(9))
        XCTAssertEqual(response?.error?.code, ControlErrorCode.notPermitted.rawValue)
    }

    func testThePolicyNamesOnlyRealMethodsAndLeavesOutTheDangerousOnes() {
        for method in WebMethodPolicy.allowed {
            XCTAssertTrue(ControlMethod.all.contains(method), method)
        }
        for method in [
            ControlMethod.nodeRotateKey, ControlMethod.trustForget, ControlMethod.messagesForget,
            ControlMethod.trustReplace, ControlMethod.peersConnect, ControlMethod.trustVerify, ControlMethod.trustAccept,
            ControlMethod.trustUnblock
        ] {
            XCTAssertFalse(WebMethodPolicy.isAllowed(method), method)
        }
        for method in WebMethodPolicy.confirmWindowAllowed {
            XCTAssertTrue(ControlMethod.all.contains(method), method)
        }
        // What the page needs.
        for method in [
            "messages.send", "messages.list", "messages.subscribe", "trust.show", "trust.block", "rooms.create",
            "messages.search"
        ] {
            XCTAssertTrue(WebMethodPolicy.isAllowed(method), method)
        }
    }
}
