import XCTest

@testable import ParleyWebCore

final class WebRequestGuardTests: XCTestCase {
    let port = 43210
    let good = WebSecret.random()

    func facts(
        _ path: Substring = "/", method: String = "GET", query: Substring? = nil, host: Substring? = "127.0.0.1:43210",
        origin: Substring? = nil, fetchSite: Substring? = nil, fetchMode: Substring? = nil, cookie: Substring? = nil,
        upgrade: Bool = false
    ) -> WebRequestFacts {
        WebRequestFacts(
            method: method, path: path, query: query, host: host, origin: origin, fetchSite: fetchSite,
            fetchMode: fetchMode, cookieHeader: cookie, isWebSocketUpgrade: upgrade)
    }

    var cookie: Substring { Substring("\(WebCookie.name)=\(good.text)") }

    func decide(_ f: WebRequestFacts) -> WebRequestDecision {
        WebRequestGuard.decide(f, port: port) { self.good.matches($0) }
    }

    func testSignedInPageIsServed() {
        guard case .serve(let asset) = decide(facts(cookie: cookie)) else { return XCTFail() }
        XCTAssertTrue(asset.contentType.hasPrefix("text/html"))
        guard case .serve = decide(facts("/app.js", host: "localhost:43210", cookie: cookie)) else { return XCTFail() }
    }

    func testNoCookieOrAWrongOneIsRefused() {
        XCTAssertEqual(decide(facts()), .refuse(.notSignedIn))
        XCTAssertEqual(decide(facts("/app.js")), .refuse(.notSignedIn))
        XCTAssertEqual(
            decide(facts(cookie: Substring("\(WebCookie.name)=\(WebSecret.random().text)"))), .refuse(.notSignedIn))
        XCTAssertEqual(decide(facts(cookie: Substring("other=\(good.text)"))), .refuse(.notSignedIn))
        XCTAssertEqual(decide(facts(cookie: Substring("x\(WebCookie.name)=\(good.text)"))), .refuse(.notSignedIn))
    }

    func testACookieAmongOthersCounts() {
        let header = Substring("a=1; \(WebCookie.name)=\(WebSecret.random().text); \(WebCookie.name)=\(good.text)")
        guard case .serve = decide(facts(cookie: header)) else { return XCTFail() }
    }

    func testDNSRebindingHostsAreRefused() {
        for host: Substring? in [
            nil, "", "evil.example:43210", "127.0.0.1", "127.0.0.1:1", "127.0.0.1:43210.evil.example",
            "localhost.evil.example:43210", "[::1]:43210", "127.1:43210", "0.0.0.0:43210", "127.0.0.1:043210"
        ] {
            XCTAssertEqual(
                decide(facts(host: host, cookie: cookie)), .refuse(.wrongHost), "\(String(describing: host))")
        }
        // Host names are case-insensitive.
        guard case .serve = decide(facts(host: "LOCALHOST:43210", cookie: cookie)) else { return XCTFail() }
    }

    func testForeignOriginsAreRefusedEverywhere() {
        for origin: Substring in [
            "http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1:43210", "http://127.0.0.1:43210/x",
            "http://127.0.0.1:43210.evil.example"
        ] {
            XCTAssertEqual(decide(facts(origin: origin, cookie: cookie)), .refuse(.crossSite), String(origin))
            XCTAssertEqual(
                decide(facts("/ws", origin: origin, cookie: cookie, upgrade: true)), .refuse(.crossSite), String(origin)
            )
        }
        XCTAssertEqual(decide(facts(fetchSite: "cross-site", cookie: cookie)), .refuse(.crossSite))
        XCTAssertEqual(decide(facts(fetchSite: "same-site", cookie: cookie)), .refuse(.crossSite))
    }

    func testWebSocketNeedsCookieAndOurOrigin() {
        XCTAssertEqual(
            decide(facts("/ws", origin: "http://127.0.0.1:43210", cookie: cookie, upgrade: true)), .upgrade)
        XCTAssertEqual(
            decide(
                facts("/ws", host: "localhost:43210", origin: "http://localhost:43210", cookie: cookie, upgrade: true)),
            .upgrade)
        XCTAssertEqual(
            decide(facts("/ws", origin: "http://127.0.0.1:43210", upgrade: true)), .refuse(.notSignedIn))
        XCTAssertEqual(decide(facts("/ws", cookie: cookie, upgrade: true)), .refuse(.crossSite), "no Origin")
        XCTAssertEqual(decide(facts("/ws", origin: "http://127.0.0.1:43210", cookie: cookie)), .refuse(.notFound))
    }

    func testLoginTakesTheTokenFromTheQuery() {
        XCTAssertEqual(decide(facts("/login", query: "token=abc")), .redeem(token: "abc"))
        XCTAssertEqual(decide(facts("/login", query: "x=1&token=abc")), .redeem(token: "abc"))
        XCTAssertEqual(decide(facts("/login")), .refuse(.linkUsedOrExpired))
        XCTAssertEqual(decide(facts("/login", query: "tokens=abc")), .refuse(.linkUsedOrExpired))
        XCTAssertEqual(decide(facts("/login", query: "token=abc", host: "evil.example:43210")), .refuse(.wrongHost))
        XCTAssertEqual(
            decide(facts("/login", query: "token=abc", origin: "http://evil.example")), .refuse(.crossSite),
            "another site cannot sign the browser in (login CSRF)")
        // Opened from the terminal or the open file (file:// is cross-site): a navigation.
        XCTAssertEqual(
            decide(facts("/login", query: "token=abc", fetchSite: "cross-site", fetchMode: "navigate")),
            .redeem(token: "abc"))
        for mode: Substring in ["cors", "no-cors", "same-origin", "websocket"] {
            XCTAssertEqual(
                decide(facts("/login", query: "token=abc", fetchSite: "cross-site", fetchMode: mode)),
                .refuse(.crossSite),
                "a fetch or image from another page cannot spend a token")
        }
        // Everywhere else a cross-site navigation is refused (SameSite=Strict would drop the
        // cookie anyway).
        XCTAssertEqual(
            decide(facts(fetchSite: "cross-site", fetchMode: "navigate", cookie: cookie)), .refuse(.crossSite))
    }

    func testOnlyGetAndHead() {
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            XCTAssertEqual(decide(facts(method: method, cookie: cookie)), .refuse(.methodNotAllowed), method)
        }
        guard case .serve = decide(facts(method: "HEAD", cookie: cookie)) else { return XCTFail() }
    }

    func testUnknownPathsAreNotFound() {
        for path: Substring in ["/x", "/../etc/passwd", "/index.html/..", "//app.js", "/Assets/app.js"] {
            XCTAssertEqual(decide(facts(path, cookie: cookie)), .refuse(.notFound), String(path))
        }
    }

    func testRefusalsSayWhatToDo() {
        XCTAssertTrue(WebRefusal.notSignedIn.message.contains("parley web"))
        XCTAssertTrue(WebRefusal.linkUsedOrExpired.message.contains("parley web"))
        XCTAssertEqual(WebRefusal.wrongHost.status, 421)
        XCTAssertEqual(WebRefusal.crossSite.status, 403)
    }

    func testSetCookieAttributes() {
        let value = WebCookie.setCookieValue(for: good)
        XCTAssertTrue(value.hasPrefix("\(WebCookie.name)=\(good.text);"))
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            XCTAssertTrue(value.contains(attribute), attribute)
        }
        XCTAssertFalse(value.contains("Domain"), "host-only cookie")
    }
}
