import XCTest

@testable import parley

final class InputHistoryTests: XCTestCase {
    func testUpRecallsSentLinesAndDownReturnsToTheDraft() {
        var h = InputHistory()
        XCTAssertNil(h.older(current: "x"), "nothing sent yet")
        h.sent("first")
        h.sent("second")
        h.sent("second")
        XCTAssertEqual(h.lines, ["first", "second"], "a line repeated is remembered once")
        XCTAssertEqual(h.older(current: "draft"), "second")
        XCTAssertEqual(h.older(current: "second"), "first")
        XCTAssertNil(h.older(current: "first"), "no older line")
        XCTAssertEqual(h.newer(), "second")
        XCTAssertEqual(h.newer(), "draft", "the line being typed comes back")
        XCTAssertNil(h.newer())
    }

    func testHistoryIsBounded() {
        var h = InputHistory()
        for i in 0..<(InputHistory.maxLines + 5) { h.sent("l\(i)") }
        XCTAssertEqual(h.lines.count, InputHistory.maxLines)
        XCTAssertEqual(h.lines.first, "l5")
    }
}
