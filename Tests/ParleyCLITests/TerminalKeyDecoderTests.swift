import XCTest

@testable import parley

final class TerminalKeyDecoderTests: XCTestCase {
    private func keys(_ chunks: [[UInt8]]) -> [TerminalKey] {
        var decoder = TerminalKeyDecoder()
        return chunks.flatMap { decoder.feed($0) }
    }

    private func bytes(_ s: String) -> [UInt8] { Array(s.utf8) }

    func testTextIsCoalescedAndControlKeysAreNamed() {
        XCTAssertEqual(keys([bytes("hi there\r")]), [.text("hi there"), .enter])
        XCTAssertEqual(keys([[0x03]]), [.interrupt])
        XCTAssertEqual(keys([[0x04]]), [.endOfInput])
        XCTAssertEqual(
            keys([[0x7F, 0x08, 0x15, 0x17, 0x0C, 0x01, 0x05, 0x02, 0x06]]),
            [.backspace, .backspace, .eraseLine, .eraseWord, .redraw, .home, .end, .left, .right])
        XCTAssertEqual(keys([bytes("a\tb")]), [.text("a b")], "a tab is typed as a space")
        XCTAssertEqual(keys([[0x00, 0x1F, 0x61]]), [.text("a")], "other control bytes are dropped")
    }

    func testEscapeSequences() {
        XCTAssertEqual(keys([bytes("\u{1B}[A\u{1B}[B\u{1B}[C\u{1B}[D")]), [.up, .down, .right, .left])
        XCTAssertEqual(keys([bytes("\u{1B}[H\u{1B}[F\u{1B}OH\u{1B}OF")]), [.home, .end, .home, .end])
        XCTAssertEqual(
            keys([bytes("\u{1B}[3~\u{1B}[5~\u{1B}[6~\u{1B}[1~\u{1B}[4~")]),
            [.delete, .pageUp, .pageDown, .home, .end])
        XCTAssertEqual(keys([bytes("\u{1B}[1;2C")]), [.right], "other modifiers are ignored, the key is kept")
        XCTAssertEqual(
            keys([bytes("\u{1B}[1;5C\u{1B}[1;5D\u{1B}[1;3D")]), [.wordRight, .wordLeft, .wordLeft],
            "Ctrl/Alt-arrows move by words")
        XCTAssertEqual(keys([bytes("\u{1B}b\u{1B}f")]), [.wordLeft, .wordRight], "Alt-b / Alt-f, not a typed b")
        XCTAssertEqual(
            keys([bytes("\u{1B}[200~pasted\r\nline\u{1B}[201~x")]), [.paste("pasted\nline"), .text("x")],
            "a bracketed paste is one key, its line breaks kept")
        XCTAssertEqual(keys([bytes("\u{1B}[99Zx")]), [.text("x")], "unknown sequences are dropped whole")
        XCTAssertEqual(keys([bytes("\u{1B}x")]), [.text("x")], "Alt+key: the escape is dropped")
    }

    func testAPasteSplitAcrossReadsIsOneKeyAndAHugeOneIsOnlyMeasured() {
        let paste = bytes("\u{1B}[200~") + Array(repeating: UInt8(ascii: "y"), count: 10_000) + bytes("\u{1B}[201~")
        for cut in [3, 7, 5_000, paste.count - 3] {
            XCTAssertEqual(
                keys([Array(paste[..<cut]), Array(paste[cut...])]), [.paste(String(repeating: "y", count: 10_000))],
                "cut at \(cut)")
        }
        var decoder = TerminalKeyDecoder()
        var got: [TerminalKey] = decoder.feed(bytes("\u{1B}[200~"))
        let chunk = [UInt8](repeating: UInt8(ascii: "z"), count: 1 << 16)
        for _ in 0..<20 { got += decoder.feed(chunk) }
        got += decoder.feed(bytes("\u{1B}[201~ok"))
        XCTAssertEqual(got, [.pasteTooLong(bytes: 20 << 16), .text("ok")])
    }

    func testInputSplitAnywhereDecodesTheSame() {
        let input = bytes("é→🦊\u{1B}[3~ok\r")
        let whole = keys([input])
        XCTAssertEqual(whole, [.text("é→🦊"), .delete, .text("ok"), .enter])
        for cut in 1..<input.count {
            let split = keys([Array(input[..<cut]), Array(input[cut...])])
            // Text before and after the cut may arrive as two text keys: compare the typed text.
            XCTAssertEqual(Self.flatten(split), Self.flatten(whole), "cut at \(cut)")
        }
    }

    func testInvalidUTF8AndGarbageDoNotAccumulate() {
        XCTAssertEqual(keys([[0x80, 0xFF, 0xC0, 0x61]]), [.text("a")])
        var decoder = TerminalKeyDecoder()
        // An escape sequence that never ends is dropped once it passes the bound.
        _ = decoder.feed(bytes("\u{1B}[") + [UInt8](repeating: 0x30, count: TerminalKeyDecoder.maxPendingBytes + 10))
        XCTAssertEqual(decoder.feed(bytes("z")), [.text("z")])
    }

    private static func flatten(_ keys: [TerminalKey]) -> [TerminalKey] {
        var out: [TerminalKey] = []
        for k in keys {
            if case .text(let t) = k, case .text(let p)? = out.last {
                out[out.count - 1] = .text(p + t)
            } else {
                out.append(k)
            }
        }
        return out
    }
}
