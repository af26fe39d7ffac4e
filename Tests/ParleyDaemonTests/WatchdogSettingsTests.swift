import XCTest

@testable import ParleyDaemon

final class WatchdogSettingsTests: XCTestCase {
    func testEnabledForThisProcess() throws {
        let settings = try XCTUnwrap(
            WatchdogSettings.from(
                environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "4242"], pid: 4242))
        XCTAssertEqual(settings.timeoutMicroseconds, 30_000_000)
        XCTAssertEqual(settings.pingIntervalMicroseconds, 15_000_000)
        XCTAssertEqual(settings.pingInterval, .seconds(15))
    }

    func testWithoutPIDAppliesToUs() throws {
        let settings = try XCTUnwrap(WatchdogSettings.from(environment: ["WATCHDOG_USEC": "1000"], pid: 7))
        XCTAssertEqual(settings.pingIntervalMicroseconds, 500)
    }

    func testDisabledOrForAnotherProcess() throws {
        XCTAssertNil(try WatchdogSettings.from(environment: [:], pid: 1))
        XCTAssertNil(try WatchdogSettings.from(environment: ["WATCHDOG_PID": "1"], pid: 1))
        XCTAssertNil(try WatchdogSettings.from(environment: ["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "99"], pid: 7))
    }

    func testMalformedValuesThrow() {
        let bad: [([String: String], WatchdogSettingsError)] = [
            (["WATCHDOG_USEC": "0"], .invalidTimeout("\"0\"")),
            (["WATCHDOG_USEC": "-5"], .invalidTimeout("\"-5\"")),
            (["WATCHDOG_USEC": "30s"], .invalidTimeout("\"30s\"")),
            (["WATCHDOG_USEC": ""], .invalidTimeout("\"\"")),
            (["WATCHDOG_USEC": "99999999999999999999999"], .invalidTimeout("\"99999999999999999999999\"")),
            (["WATCHDOG_USEC": "86400000001"], .invalidTimeout("\"86400000001\"")),
            (["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "abc"], .invalidPID("\"abc\"")),
            (["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "0"], .invalidPID("\"0\"")),
            (["WATCHDOG_USEC": "1000", "WATCHDOG_PID": "4294967296"], .invalidPID("\"4294967296\""))
        ]
        for (environment, expected) in bad {
            XCTAssertThrowsError(try WatchdogSettings.from(environment: environment, pid: 7), "\(environment)") {
                XCTAssertEqual($0 as? WatchdogSettingsError, expected)
            }
        }
    }
}
