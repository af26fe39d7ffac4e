import XCTest
final class ParleyDaemonTestsSmoke: XCTestCase { func testNothing() {} }
