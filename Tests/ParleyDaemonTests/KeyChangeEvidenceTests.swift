import XCTest
@testable import ParleyDaemon

/// Issue 16 item 11: a key change found by address must not be logged as one found by name.
final class KeyChangeEvidenceTests: XCTestCase {
    func testTheWarningSaysWhichRuleMatched() {
        XCTAssertTrue(KeyChangeEvidence.name.logMessage.contains("using a known name"))
        XCTAssertTrue(KeyChangeEvidence.address.logMessage.contains("at a known peer's address"))
        XCTAssertFalse(KeyChangeEvidence.address.logMessage.contains("name"))
    }
}
