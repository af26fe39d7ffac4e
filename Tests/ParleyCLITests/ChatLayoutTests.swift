import XCTest

@testable import parley

final class ChatLayoutTests: XCTestCase {
    private let clock: (Int) -> String = { _ in "12:00" }

    func testDisplayWidth() {
        XCTAssertEqual(DisplayWidth.of("abc"), 3)
        XCTAssertEqual(DisplayWidth.of("张伟"), 4)
        XCTAssertEqual(DisplayWidth.of("🦊"), 2)
        XCTAssertEqual(DisplayWidth.of("e\u{301}"), 1, "a combining accent takes no column")
        XCTAssertEqual(DisplayWidth.of("✓✓…"), 3)
        XCTAssertEqual(DisplayWidth.prefix("ab张c", fitting: 3), "ab")
    }

    func testWrapBreaksAtSpacesIndentsAndCutsLongWords() {
        XCTAssertEqual(ChatLayout.wrap("aaa bbb ccc", width: 7, indent: 2), ["aaa bbb", "  ccc"])
        XCTAssertEqual(ChatLayout.wrap("abcdefghij", width: 4, indent: 0), ["abcd", "efgh", "ij"])
        XCTAssertEqual(ChatLayout.wrap("one\ntwo", width: 10, indent: 1), ["one", " two"])
        for line in ChatLayout.wrap(String(repeating: "张伟 word ", count: 20), width: 13, indent: 3) {
            XCTAssertLessThanOrEqual(DisplayWidth.of(line), 13, line)
        }
    }

    func testEntryLinesCarryNameMarkAndSafeText() {
        let incoming = ChatEntry(id: "1", kind: .incoming(from: "bob"), time: 0, body: "hi\u{1B}[2J", mark: nil)
        XCTAssertEqual(
            ChatLayout.lines(incoming, width: 80, time: clock), ["12:00 bob: hi\u{FFFD}[2J"],
            "an escape from a peer is never sent to the terminal")
        let outgoing = ChatEntry(id: "2", kind: .outgoing, time: 0, body: "ok", mark: .read)
        XCTAssertEqual(ChatLayout.lines(outgoing, width: 80, time: clock), ["12:00 you: ok ✓✓"])
        let long = ChatEntry(id: "3", kind: .incoming(from: "bob"), time: 0, body: "aaaa bbbb cccc", mark: nil)
        XCTAssertEqual(
            ChatLayout.lines(long, width: 20, time: clock), ["12:00 bob: aaaa bbbb", "      cccc"],
            "the indent under a long head is capped at a third of the width")
    }

    func testScreenPutsMessagesAboveStatusAndPromptAtTheBottom() {
        var editor = LineEditor()
        _ = editor.apply(.text("draft"))
        var scroll = 0
        let lines = (1...10).map { "line \($0)" }
        let s = ChatLayout.screen(
            lines: lines, status: "bob · online", editor: editor, width: 30, height: 6, scroll: &scroll)
        XCTAssertEqual(s.rows.count, 6)
        XCTAssertEqual(Array(s.rows[0..<4]), ["line 7", "line 8", "line 9", "line 10"])
        XCTAssertTrue(s.rows[4].hasPrefix(" bob · online"))
        XCTAssertEqual(DisplayWidth.of(s.rows[4]), 30, "the status bar spans the width")
        XCTAssertEqual(s.rows[5], "> draft")
        XCTAssertEqual(s.cursorRow, 5)
        XCTAssertEqual(s.cursorColumn, 7)

        scroll = 3
        let up = ChatLayout.screen(lines: lines, status: "s", editor: editor, width: 60, height: 6, scroll: &scroll)
        XCTAssertEqual(Array(up.rows[0..<4]), ["line 4", "line 5", "line 6", "line 7"])
        XCTAssertTrue(up.rows[4].contains("3 more lines below"))
        scroll = 100
        _ = ChatLayout.screen(lines: lines, status: "s", editor: editor, width: 60, height: 6, scroll: &scroll)
        XCTAssertEqual(scroll, 6, "scrolling stops at the first line")

        var none = 0
        let short = ChatLayout.screen(lines: ["a"], status: "s", editor: editor, width: 30, height: 4, scroll: &none)
        XCTAssertEqual(Array(short.rows[0..<2]), ["", "a"], "few messages sit at the bottom")
        let tiny = ChatLayout.screen(lines: lines, status: "s", editor: editor, width: 30, height: 2, scroll: &none)
        XCTAssertEqual(tiny.rows, ["> draft"], "a terminal too small for messages still has the prompt")
    }
}
