import XCTest

@testable import ParleyWebCore

final class WebRequestGuardTests: XCTestCase {
    let port = 43210
    let key = WebSignInKey.random()

    func facts(
        _ path: Substring = "/app.js", method: String = "GET", query: Substring? = nil,
        host: Substring? = "127.0.0.1:43210", origin: Substring? = nil, fetchSite: Substring? = nil,
        fetchMode: Substring? = nil, auth: Substring? = nil, upgrade: Bool = false
    ) -> WebRequestFacts {
        WebRequestFacts(
            method: method, path: path, query: query, host: host, origin: origin, fetchSite: fetchSite,
            fetchMode: fetchMode, authHeader: auth, isWebSocketUpgrade: upgrade)
    }

    func decide(_ f: WebRequestFacts) -> WebRequestDecision {
        WebRequestGuard.decide(f, port: port, isUploadKey: key.isUploadKey)
    }

    func testThePageIsPublicAndServedWithoutACredential() {
        // The page carries no secret (the secret is in the link's fragment, which the
        // browser keeps), so it is served to anyone on loopback with our Host.
        guard case .serve(let asset) = decide(facts("/")) else { return XCTFail() }
        XCTAssertTrue(asset.contentType.hasPrefix("text/html"))
        guard case .serve = decide(facts("/confirm.js", host: "localhost:43210")) else { return XCTFail() }
        guard case .serve = decide(facts("/auth.js", fetchSite: "same-origin")) else { return XCTFail() }
    }

    func testTheSignInLinkOpensFromTheTerminalOrTheSignInFile() {
        // The terminal ("none") and file:// ("cross-site") start a top-level navigation.
        for site: Substring in ["none", "cross-site", "same-site"] {
            guard case .serve = decide(facts("/", fetchSite: site, fetchMode: "navigate")) else {
                return XCTFail(String(site))
            }
        }
        // But not a fetch, and no other file, from another site.
        XCTAssertEqual(decide(facts("/", fetchSite: "cross-site", fetchMode: "cors")), .refuse(.crossSite))
        XCTAssertEqual(decide(facts("/app.js", fetchSite: "cross-site", fetchMode: "navigate")), .refuse(.crossSite))
        XCTAssertEqual(decide(facts("/", origin: "http://evil.example", fetchMode: "navigate")), .refuse(.crossSite))
    }

    func testNoCookieIsEverSetOrRead() {
        // A cookie, even one a browser still holds from an older parley web, opens nothing:
        // the upload needs its key and the WebSocket signs in by itself.
        // (`WebRequestFacts` has no field for one: the server does not look.)
        XCTAssertEqual(
            decide(facts("/upload", method: "POST", origin: "http://127.0.0.1:43210")), .refuse(.notSignedIn))
        let assets = WebAssets.byPath.values.map { String(decoding: $0.bytes, as: UTF8.self) }.joined()
        XCTAssertFalse(assets.contains("document.cookie"))
        XCTAssertFalse(assets.contains("login?token"))
    }

    func testDNSRebindingHostsAreRefused() {
        for host: Substring? in [
            nil, "", "evil.example:43210", "127.0.0.1", "127.0.0.1:1", "127.0.0.1:43210.evil.example",
            "localhost.evil.example:43210", "[::1]:43210", "127.1:43210", "0.0.0.0:43210", "127.0.0.1:043210"
        ] {
            XCTAssertEqual(decide(facts(host: host)), .refuse(.wrongHost), "\(String(describing: host))")
            XCTAssertEqual(
                decide(facts("/", host: host, fetchMode: "navigate")), .refuse(.wrongHost),
                "\(String(describing: host))")
        }
        // Host names are case-insensitive.
        guard case .serve = decide(facts("/rpc.js", host: "LOCALHOST:43210")) else { return XCTFail() }
    }

    func testForeignOriginsAreRefusedEverywhere() {
        for origin: Substring in [
            "http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1:43210", "http://127.0.0.1:43210/x",
            "http://127.0.0.1:43210.evil.example"
        ] {
            XCTAssertEqual(decide(facts(origin: origin)), .refuse(.crossSite), String(origin))
            // A WebSocket from "null" (the sign-in file) is only a probe: WebAuthHandshakeTests.
            if origin != "null" {
                XCTAssertEqual(
                    decide(facts("/ws", origin: origin, upgrade: true)), .refuse(.crossSite), String(origin))
            }
        }
        XCTAssertEqual(decide(facts(fetchSite: "cross-site")), .refuse(.crossSite))
        XCTAssertEqual(decide(facts(fetchSite: "same-site")), .refuse(.crossSite))
    }

    func testWebSocketNeedsOurOriginAndSignsInItself() {
        XCTAssertEqual(decide(facts("/ws", origin: "http://127.0.0.1:43210", upgrade: true)), .upgrade(.page))
        XCTAssertEqual(
            decide(facts("/ws", host: "localhost:43210", origin: "http://localhost:43210", upgrade: true)),
            .upgrade(.confirm))
        XCTAssertEqual(decide(facts("/ws", upgrade: true)), .refuse(.crossSite), "no Origin")
        XCTAssertEqual(decide(facts("/ws", origin: "http://127.0.0.1:43210")), .refuse(.notFound))
    }

    func testTheTwoWindowsShareNoRequestAndNoScript() {
        // The page (127.0.0.1) and the confirmation window (localhost) are two origins; a
        // request of one to the other's host is refused, whatever it is.
        let page: Substring = "http://127.0.0.1:43210"
        let confirm: Substring = "http://localhost:43210"
        XCTAssertEqual(decide(facts("/ws", host: "localhost:43210", origin: page, upgrade: true)), .refuse(.crossSite))
        XCTAssertEqual(decide(facts("/ws", origin: confirm, upgrade: true)), .refuse(.crossSite))
        XCTAssertEqual(decide(facts("/confirm.js", host: "localhost:43210", origin: page)), .refuse(.crossSite))
        XCTAssertEqual(
            decide(facts("/upload", method: "POST", host: "localhost:43210", origin: confirm, auth: "x")),
            .refuse(.methodNotAllowed))
        // Neither serves the other's script: the confirmation window never runs the chat.
        for path: Substring in ["/app.js", "/files.js", "/index.html"] {
            XCTAssertEqual(decide(facts(path, host: "localhost:43210")), .refuse(.notFound), String(path))
        }
        for path: Substring in ["/confirm.html", "/confirm.js"] {
            XCTAssertEqual(decide(facts(path)), .refuse(.notFound), String(path))
        }
        // The page opens the window (a top-level navigation from another site, 127.0.0.1).
        guard
            case .serve(let asset) = decide(
                facts("/confirm.html", host: "localhost:43210", fetchSite: "cross-site", fetchMode: "navigate"))
        else { return XCTFail() }
        XCTAssertEqual(asset.path, "/confirm.html")
        guard case .serve(let root) = decide(facts("/", host: "localhost:43210", fetchMode: "navigate")) else {
            return XCTFail()
        }
        XCTAssertEqual(root.path, "/confirm.html")
    }

    func testTheOldLoginPathIsGone() {
        XCTAssertEqual(decide(facts("/login", query: "token=abc")), .refuse(.notFound))
    }

    func testOnlyGetAndHead() {
        for method in ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"] {
            XCTAssertEqual(decide(facts(method: method)), .refuse(.methodNotAllowed), method)
        }
        guard case .serve = decide(facts(method: "HEAD")) else { return XCTFail() }
    }

    func testUnknownPathsAreNotFound() {
        for path: Substring in ["/x", "/../etc/passwd", "/index.html/..", "//app.js", "/Assets/app.js"] {
            XCTAssertEqual(decide(facts(path)), .refuse(.notFound), String(path))
        }
    }

    func testRefusalsSayWhatToDo() {
        XCTAssertTrue(WebRefusal.notSignedIn.message.contains("parley web"))
        XCTAssertEqual(WebRefusal.wrongHost.status, 421)
        XCTAssertEqual(WebRefusal.crossSite.status, 403)
    }
}
