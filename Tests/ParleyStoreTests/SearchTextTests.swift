import XCTest

@testable import ParleyStore

final class SearchTextTests: XCTestCase {
    func testCJKCharactersBecomeTokensOfTheirOwn() {
        XCTAssertEqual(SearchText.indexText("在东京"), " 在  东  京 ")
        XCTAssertEqual(SearchText.indexText("Café ok"), "Café ok", "other scripts are left to unicode61")
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
