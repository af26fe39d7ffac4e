import Foundation
import ParleyControlProtocol
import SeededRandom
import XCTest

/// The typed `messages.send` reader (`MessagesSendLine`) against the general route
/// (`ControlRequestParser` then `decodeParams`): whatever it accepts, the general route
/// accepts with the same id and params or rejects with the same error; whatever it does not
/// understand it leaves to the general route (nil), which answers as it always did.
final class MessagesSendLineTests: XCTestCase {
    typealias Outcome = (id: JSONRPCID?, params: Result<MessagesSendParams, JSONRPCError>)

    /// What the daemon answered before the fast path: nil when the line is not a
    /// `messages.send` the general route reads (its own error answers it).
    private func general(_ line: [UInt8]) -> Outcome? {
        guard case .success(let request) = ControlRequestParser.parse(line: line),
            request.method == ControlMethod.messagesSend
        else { return nil }
        do {
            return (request.id, .success(try request.decodeParams(MessagesSendParams.self)))
        } catch {
            return (request.id, .failure(error))
        }
    }

    /// The fast path agrees with the general route, or declines. Returns whether it took the line.
    @discardableResult
    private func assertAgrees(_ line: [UInt8], file: StaticString = #filePath, line l: UInt = #line) -> Bool {
        guard let fast = MessagesSendLine.parse(line) else { return false }
        guard let slow = general(line) else {
            XCTFail(
                "fast path took a line the general route refuses: \(String(decoding: line, as: UTF8.self))",
                file: file, line: l)
            return true
        }
        XCTAssertEqual(fast.id, slow.id, file: file, line: l)
        switch (fast.params, slow.params) {
        case (.success(let a), .success(let b)): XCTAssertEqual(a, b, file: file, line: l)
        case (.failure(let a), .failure(let b)): XCTAssertEqual(a, b, file: file, line: l)
        default: XCTFail("fast \(fast.params) but general \(slow.params)", file: file, line: l)
        }
        return true
    }

    private func assertTaken(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(
            assertAgrees(Array(text.utf8), file: file, line: line), "not taken: \(text)", file: file, line: line)
    }

    private func assertDeclined(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertNil(MessagesSendLine.parse(bytes), String(decoding: bytes, as: UTF8.self), file: file, line: line)
    }

    private func assertDeclined(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        assertDeclined(Array(text.utf8), file: file, line: line)
    }

    func testPlainSendsAreReadByTheFastPath() {
        assertTaken(#"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"body":"hi","to":"bob"}}"#)
        assertTaken(#"{"method":"messages.send","params":{"to":"bob","body":"hi"},"jsonrpc":"2.0","id":"a-1"}"#)
        assertTaken(
            #" { "jsonrpc" : "2.0" ,\#t"method":"messages.send" , "params" : { "to" : "bob" , "body" : "x" } } "#)
        assertTaken(#"{"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"no id: a notification"}}"#)
        assertTaken(
            #"{"id":-0,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"b","wait":true,"timeoutMs":5}}"#
        )
        assertTaken(
            #"{"id":999999999999999999,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"b","wait":false}}"#
        )
        assertTaken(
            ##"{"id":"","jsonrpc":"2.0","method":"messages.send","params":{"to":"#room","body":"é漢字🙂 / \##u{7F}"}}"##)
        let fast = MessagesSendLine.parse(
            Array(
                #"{"id":7,"jsonrpc":"2.0","method":"messages.send","params":{"body":"hi","to":"bob","timeoutMs":20}}"#
                    .utf8))
        XCTAssertEqual(fast?.id, .number(7))
        XCTAssertEqual(try fast?.params.get(), MessagesSendParams(to: "bob", body: "hi", wait: nil, timeoutMs: 20))
    }

    /// Params that parse but fail `validate()`: the fast path gives exactly its error.
    func testInvalidParamsGiveTheSameErrors() {
        for params in [
            #"{"to":"bob","body":""}"#, #"{"to":"","body":"x"}"#,
            #"{"to":"bob","body":"x","timeoutMs":0}"#, #"{"to":"bob","body":"x","timeoutMs":-5}"#,
            #"{"to":"bob","body":"x","timeoutMs":999999999999999999}"#,
            "{\"to\":\"" + String(repeating: "b", count: ControlLimits.maxPeerSelectorBytes + 1) + "\",\"body\":\"x\"}"
        ] {
            let text = #"{"id":3,"jsonrpc":"2.0","method":"messages.send","params":"# + params + "}"
            assertTaken(text)
            guard case .failure(let error)? = MessagesSendLine.parse(Array(text.utf8))?.params else {
                return XCTFail("not an error: \(params)")
            }
            XCTAssertEqual(error.code, ControlErrorCode.invalidParams.rawValue)
        }
    }

    /// Hostile lines the fast path must leave to the general route (which answers each with
    /// the typed error it always gave): huge numbers, duplicate members, bad UTF-8, escapes,
    /// wrong types, unknown members, nulls, other methods, trailing bytes.
    func testHostileLinesAreLeftToTheGeneralRoute() {
        let head = #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":"#
        for params in [
            #"{"to":"bob","body":"x","timeoutMs":1e3}"#, #"{"to":"bob","body":"x","timeoutMs":5.0}"#,
            #"{"to":"bob","body":"x","timeoutMs":9999999999999999999}"#,
            #"{"to":"bob","body":"x","timeoutMs":1e400}"#, #"{"to":"bob","body":"x","timeoutMs":01}"#,
            #"{"to":"bob","body":"x","timeoutMs":-}"#, #"{"to":"bob","body":"x","timeoutMs":"5"}"#,
            #"{"to":"bob","body":"x","timeoutMs":null}"#, #"{"to":"bob","body":"x","wait":"yes"}"#,
            #"{"to":"bob","body":"x","wait":null}"#, #"{"to":"bob","body":"x","wait":1}"#,
            #"{"to":"bob","body":"x","body":"y"}"#, #"{"to":"bob","to":"eve","body":"y"}"#,
            #"{"to":"bob","body":"line\nbreak"}"#, #"{"to":"bob","body":"\u00e9"}"#, #"{"to":"b\"ob","body":"x"}"#,
            #"{"to":5,"body":"x"}"#, #"{"to":"bob","body":["x"]}"#, #"{"to":"bob","body":{}}"#,
            #"{"to":"bob"}"#, #"{"body":"x"}"#, #"{}"#, #"[]"#, #""x""#, #"null"#,
            #"{"to":"bob","body":"x","bdy":"typo"}"#, #"{"to":"bob","body":"x",}"#, #"{"to":"bob" "body":"x"}"#,
            "{\"to\":\"bob\",\"body\":\"tab\there\"}"
        ] {
            let text = head + params + "}"
            assertDeclined(text)
            XCTAssertFalse(assertAgrees(Array(text.utf8)))
        }
        for text in [
            #"{"id":1,"id":2,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.0","jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"},"params":{"to":"b","body":"y"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":null,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1.5,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":12345678901234567890,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":[1],"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.1","method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":2.0,"method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"method":"messages.send","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.0","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.list","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages\u002esend","params":{"to":"bob","body":"x"}}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send"}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":[]}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"},"extra":1}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}x"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}}{}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"}"#,
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"x"#,
            #"{"#, "", " "
        ] {
            assertDeclined(text)
            XCTAssertFalse(assertAgrees(Array(text.utf8)))
        }
        // Bad UTF-8 in a string (a lone continuation byte, an overlong form, a surrogate).
        for bad: [UInt8] in [[0x80], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xFF], [0xE2, 0x82]] {
            let text =
                Array(#"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"to":"bob","body":"a"#.utf8)
                + bad + Array(#""}}"#.utf8)
            assertDeclined(text)
            XCTAssertFalse(assertAgrees(text))
            guard case .failure(let e) = ControlRequestParser.parse(line: text) else { return XCTFail("accepted") }
            XCTAssertEqual(e.code, ControlErrorCode.parseError.rawValue)
        }
    }

    /// Random damage to real lines: the fast path agrees with the general route on every one
    /// it takes (and takes the undamaged ones).
    func testRandomlyDamagedLinesAgreeWithTheGeneralRoute() {
        var rng = SplitMix64(seed: 0x5EED_0320)
        let seeds = [
            #"{"id":1,"jsonrpc":"2.0","method":"messages.send","params":{"body":"hello","to":"bob"}}"#,
            ##"{"jsonrpc":"2.0","method":"messages.send","params":{"to":"#room","body":"é🙂","wait":true,"timeoutMs":1500},"id":"x"}"##,
            #"{"id":-12,"jsonrpc":"2.0","method":"messages.send","params":{"to":"ab12","body":" ","wait":false}}"#
        ].map { Array($0.utf8) }
        let alphabet =
            Array(#"{}[]":,\ -+.eE0123456789abtrufnl"#.utf8) + [0x00, 0x09, 0x0A, 0x7F, 0x80, 0xC3, 0xA9, 0xFF]
        var taken = 0
        for seed in seeds { XCTAssertTrue(assertAgrees(seed)) }
        for _ in 0..<20_000 {
            var line = seeds.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                let at = Int.random(in: 0..<line.count, using: &rng)
                switch Int.random(in: 0..<3, using: &rng) {
                case 0: line[at] = alphabet.randomElement(using: &rng)!
                case 1: line.insert(alphabet.randomElement(using: &rng)!, at: at)
                default: line.remove(at: at)
                }
            }
            if assertAgrees(line) { taken += 1 }
        }
        XCTAssertGreaterThan(taken, 100, "the damage left some lines the fast path reads")
    }
}
