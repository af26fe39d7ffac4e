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

final class WebSessionsTests: XCTestCase {
    func testALaunchTokenWorksOnceAndGivesANewSessionSecret() {
        var sessions = WebSessions()
        let token = sessions.issueLaunchToken(now: 0)
        guard let session = sessions.redeem(launchToken: Substring(token.text), now: 1) else {
            return XCTFail("a fresh token must be redeemable")
        }
        XCTAssertNotEqual(session, token, "the cookie is not the token from the URL")
        XCTAssertTrue(sessions.isSession(Substring(session.text)))
        XCTAssertFalse(sessions.isSession(Substring(token.text)), "the launch token itself is no session")
        XCTAssertNil(sessions.redeem(launchToken: Substring(token.text), now: 2), "a used token is worth nothing")
        XCTAssertFalse(sessions.isUsable(token, now: 2))
    }

    func testALaunchTokenExpires() {
        var sessions = WebSessions()
        let token = sessions.issueLaunchToken(now: 100)
        let lifetime = Double(WebLimits.launchTokenLifetimeSeconds)
        XCTAssertTrue(sessions.isUsable(token, now: 100 + lifetime - 1))
        XCTAssertFalse(sessions.isUsable(token, now: 100 + lifetime))
        XCTAssertNil(sessions.redeem(launchToken: Substring(token.text), now: 100 + lifetime))
        XCTAssertEqual(sessions.usableLaunchTokenCount(now: 100 + lifetime), 0)
    }

    func testUnknownAndMalformedTokensAreRefused() {
        var sessions = WebSessions()
        _ = sessions.issueLaunchToken(now: 0)
        XCTAssertNil(sessions.redeem(launchToken: Substring(WebSecret.random().text), now: 1))
        XCTAssertNil(sessions.redeem(launchToken: "", now: 1))
        XCTAssertNil(sessions.redeem(launchToken: "../../etc/passwd", now: 1))
        XCTAssertEqual(sessions.usableLaunchTokenCount(now: 1), 1, "a wrong guess does not use up the real token")
    }

    func testTwoTokensAreIndependent() {
        var sessions = WebSessions()
        let a = sessions.issueLaunchToken(now: 0)
        let b = sessions.issueLaunchToken(now: 0)
        XCTAssertNotNil(sessions.redeem(launchToken: Substring(b.text), now: 1))
        XCTAssertTrue(sessions.isUsable(a, now: 1))
        XCTAssertNotNil(sessions.redeem(launchToken: Substring(a.text), now: 1))
    }

    func testSessionsAreBoundedOldestDropped() {
        var sessions = WebSessions()
        var secrets: [WebSecret] = []
        for _ in 0..<(WebLimits.maxSessions + 1) {
            let token = sessions.issueLaunchToken(now: 0)
            secrets.append(sessions.redeem(launchToken: Substring(token.text), now: 0)!)
        }
        XCTAssertFalse(sessions.isSession(Substring(secrets[0].text)))
        XCTAssertTrue(sessions.isSession(Substring(secrets.last!.text)))
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
