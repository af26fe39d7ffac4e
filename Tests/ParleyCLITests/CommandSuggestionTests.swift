import XCTest

@testable import parley

final class CommandSuggestionTests: XCTestCase {
    let names = ["status", "whoami", "peers", "send", "read", "follow", "connect", "search", "chat", "export"]

    func testTyposFindTheCommand() {
        XCTAssertEqual(CommandSuggestion.suggest("sned", among: names), "send", "swapped letters")
        XCTAssertEqual(CommandSuggestion.suggest("folow", among: names), "follow")
        XCTAssertEqual(CommandSuggestion.suggest("Peer", among: names), "peers")
        XCTAssertEqual(CommandSuggestion.suggest("conn", among: names), "connect", "a unique prefix")
    }

    func testUnrelatedWordsGetNoSuggestion() {
        XCTAssertNil(CommandSuggestion.suggest("banana", among: names))
        XCTAssertNil(CommandSuggestion.suggest("x", among: names))
    }

    func testDistance() {
        XCTAssertEqual(CommandSuggestion.distance("", "abc"), 3)
        XCTAssertEqual(CommandSuggestion.distance("abc", "abc"), 0)
        XCTAssertEqual(CommandSuggestion.distance("ab", "ba"), 1)
        XCTAssertEqual(CommandSuggestion.distance("kitten", "sitting"), 3)
    }
}
