import XCTest
final class ParleyCoreTestsSmoke: XCTestCase { func testNothing() {} }
