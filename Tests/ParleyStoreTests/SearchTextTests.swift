import XCTest

@testable import ParleyStore

final class SearchTextTests: XCTestCase {
    func testCJKCharactersBecomeTokensOfTheirOwn() {
        XCTAssertEqual(SearchText.indexText("在东京"), " 在  东  京 ")
        XCTAssertEqual(SearchText.indexText("Café ok"), "Café ok", "other scripts are left to unicode61")
    }

    /// The fast path (no UTF-8 lead byte of 0xE1 or more: no CJK possible) and the
    /// scalar walk agree at the edges: U+10FF is not CJK, U+1100 (Hangul jamo) is, and
    /// U+20AC (€) has a high lead byte but is not CJK.
    func testTextWithoutCJKIsIndexedAsItIsAndTheFirstCJKScalarIsSplit() {
        XCTAssertEqual(SearchText.indexText("plain ascii, Ünïcode ñ"), "plain ascii, Ünïcode ñ")
        XCTAssertEqual(SearchText.indexText("a\u{10FF}b"), "a\u{10FF}b")
        XCTAssertEqual(SearchText.indexText("a\u{1100}b"), "a \u{1100} b")
        XCTAssertEqual(SearchText.indexText("5 € and 東"), "5 € and  東 ")
        XCTAssertEqual(SearchText.indexText(""), "")
    }

    func testQueriesArePhrasesWithPrefixesAndOperatorsAreText() {
        XCTAssertEqual(SearchText.matchExpression("hello world"), "\"hello\"* \"world\"*")
        XCTAssertEqual(SearchText.matchExpression("say \"hi\""), "\"say\"* \"\"\"hi\"\"\"*")
        XCTAssertEqual(SearchText.matchExpression("东京"), "\" 东  京 \"*")
        XCTAssertNil(SearchText.matchExpression("  - !! "))
        XCTAssertEqual(SearchText.terms("a - b"), ["a", "b"])
    }

    func testSnippetIsTheWholeShortBodyOnOneLine() {
        XCTAssertEqual(SearchText.snippet("two\nlines", query: "two"), "two lines")
    }
}
