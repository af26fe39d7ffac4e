import XCTest

@testable import parley

final class LineEditorTests: XCTestCase {
    private func editor(_ keys: [TerminalKey]) -> LineEditor {
        var e = LineEditor()
        for k in keys { _ = e.apply(k) }
        return e
    }

    func testTypingMovingAndErasing() {
        var e = editor([.text("helo"), .left, .text("l")])
        XCTAssertEqual(e.text, "hello")
        XCTAssertEqual(e.cursor, 4)
        _ = e.apply(.home)
        _ = e.apply(.delete)
        XCTAssertEqual(e.text, "ello")
        _ = e.apply(.end)
        _ = e.apply(.backspace)
        XCTAssertEqual(e.text, "ell")
        XCTAssertEqual(e.apply(.right), .ignored, "already at the end")
        XCTAssertEqual(editor([.text("one two  three"), .eraseWord]).text, "one two  ")
        XCTAssertEqual(editor([.text("one two  "), .eraseWord]).text, "one ")
        XCTAssertEqual(editor([.text("abc"), .eraseLine]).text, "")
        XCTAssertEqual(editor([.backspace, .left, .delete]).text, "", "edits at the edges do nothing")
    }

    func testEnterSubmitsNonBlankTextAndKeepsItUntilCleared() {
        var e = editor([.text("hi you")])
        XCTAssertEqual(e.apply(.enter), .submit("hi you"))
        XCTAssertEqual(e.text, "hi you", "a failed send must not lose the text")
        e.clear()
        XCTAssertTrue(e.isEmpty)
        XCTAssertEqual(editor([.text("   ")]).characters.count, 3)
        var blank = editor([.text("   ")])
        XCTAssertEqual(blank.apply(.enter), .edited, "a blank line sends nothing")
        XCTAssertTrue(blank.isEmpty, "and leaves no invisible spaces in the prompt")
        var empty = LineEditor()
        XCTAssertEqual(empty.apply(.enter), .ignored)
    }

    func testWordMovesLikeReadline() {
        var e = editor([.text("one two, three")])
        XCTAssertEqual(e.apply(.wordLeft), .edited)
        XCTAssertEqual(e.cursor, 9, "before three")
        _ = e.apply(.wordLeft)
        XCTAssertEqual(e.cursor, 4, "before two (the comma is not a word)")
        _ = e.apply(.wordRight)
        XCTAssertEqual(e.cursor, 7, "after two")
        _ = e.apply(.home)
        XCTAssertEqual(e.apply(.wordLeft), .ignored)
        _ = e.apply(.end)
        XCTAssertEqual(e.apply(.wordRight), .ignored)
    }

    func testTextOverTheBodyLimitIsRefusedWholeNotCut() {
        var e = LineEditor()
        XCTAssertEqual(e.apply(.text(String(repeating: "a", count: LineEditor.maxBytes - 1))), .edited)
        XCTAssertEqual(
            e.apply(.text("éb")), .refused(bytes: LineEditor.maxBytes + 2),
            "a paste that does not fit is refused, not cut")
        XCTAssertEqual(e.text.utf8.count, LineEditor.maxBytes - 1, "nothing of it was inserted")
        XCTAssertEqual(e.apply(.text("b")), .edited)
        XCTAssertEqual(e.text.utf8.count, LineEditor.maxBytes)
        XCTAssertEqual(e.apply(.text("c")), .refused(bytes: LineEditor.maxBytes + 1))
        XCTAssertEqual(e.apply(.pasteTooLong(bytes: 2_000_000)), .refused(bytes: LineEditor.maxBytes + 2_000_000))
        var lines = LineEditor()
        XCTAssertEqual(lines.apply(.paste("a\nb")), .edited)
        XCTAssertEqual(lines.visible(width: 10).text, "a↵b", "a pasted line break is drawn on one row")
        XCTAssertEqual(lines.apply(.enter), .submit("a\nb"))
        var paste = LineEditor()
        XCTAssertEqual(paste.apply(.text(String(repeating: "x", count: 66_000))), .refused(bytes: 66_000))
        XCTAssertTrue(paste.isEmpty)
    }

    func testVisibleWindowKeepsTheCursorOnScreen() {
        let e = editor([.text("0123456789abcdef")])
        let v = e.visible(width: 10)
        XCTAssertEqual(v.cursorColumn, 9)
        XCTAssertTrue("0123456789abcdef".hasSuffix(v.text))
        XCTAssertLessThanOrEqual(DisplayWidth.of(v.text), 10)
        let home = editor([.text("0123456789abcdef"), .home]).visible(width: 10)
        XCTAssertEqual(home.text, "0123456789")
        XCTAssertEqual(home.cursorColumn, 0)
        let wide = editor([.text("张伟张伟张伟")]).visible(width: 7)
        XCTAssertEqual(wide.cursorColumn, 6)
        XCTAssertEqual(wide.text, "伟张伟")
    }
}
