import XCTest

@testable import ParleyWebCore

final class WebSecretTests: XCTestCase {
    func testRandomSecretsAre64HexDigitsAndDistinct() {
        let secrets = (0..<100).map { _ in WebSecret.random().text }
        XCTAssertEqual(Set(secrets).count, 100)
        for s in secrets {
            XCTAssertEqual(s.count, 64)
            XCTAssertTrue(s.allSatisfy { "0123456789abcdef".contains($0) })
        }
    }

    func testMatchesOnlyItself() {
        let secret = WebSecret.random()
        XCTAssertTrue(secret.matches(Substring(secret.text)))
        var flipped = Array(secret.text)
        flipped[63] = flipped[63] == "0" ? "1" : "0"
        XCTAssertFalse(secret.matches(Substring(String(flipped))))
        XCTAssertFalse(secret.matches(Substring(secret.text.dropLast())))
        XCTAssertFalse(secret.matches(Substring(secret.text + "0")))
        XCTAssertFalse(secret.matches(""))
        XCTAssertFalse(secret.matches(Substring(secret.text.uppercased())))
    }

    func testParsingAcceptsOnlyLowerHexOfTheRightLength() {
        let secret = WebSecret.random()
        XCTAssertEqual(WebSecret(parsing: Substring(secret.text)), secret)
        XCTAssertNil(WebSecret(parsing: Substring(secret.text.uppercased())))
        XCTAssertNil(WebSecret(parsing: "abc"))
        XCTAssertNil(WebSecret(parsing: Substring(String(repeating: "g", count: 64))))
    }

    func testDescriptionNeverShowsTheSecret() {
        let secret = WebSecret.random()
        XCTAssertFalse("\(secret)".contains(secret.text))
    }
}

final class WebRateLimitTests: XCTestCase {
    func testBurstThenSteadyRate() {
        var limit = WebRateLimit(now: 0, burst: 3, perSecond: 2)
        XCTAssertTrue(limit.take(now: 0))
        XCTAssertTrue(limit.take(now: 0))
        XCTAssertTrue(limit.take(now: 0))
        XCTAssertFalse(limit.take(now: 0))
        XCTAssertFalse(limit.take(now: 0.4))
        XCTAssertTrue(limit.take(now: 0.5), "two a second: one more after half a second")
        XCTAssertFalse(limit.take(now: 0.5))
        XCTAssertTrue(limit.take(now: 100))
        XCTAssertTrue(limit.take(now: 100))
        XCTAssertTrue(limit.take(now: 100))
        XCTAssertFalse(limit.take(now: 100), "a long pause refills only up to the burst")
    }

    func testAClockGoingBackwardsGivesNothing() {
        var limit = WebRateLimit(now: 10, burst: 1, perSecond: 1)
        XCTAssertTrue(limit.take(now: 10))
        XCTAssertFalse(limit.take(now: 5))
        XCTAssertFalse(limit.take(now: 10.5))
    }
}
