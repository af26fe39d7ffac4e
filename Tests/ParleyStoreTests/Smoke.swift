import XCTest
final class ParleyStoreTestsSmoke: XCTestCase { func testNothing() {} }
