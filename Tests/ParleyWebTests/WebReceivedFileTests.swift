import XCTest

@testable import ParleyWebCore

/// `GET /files/ID`: who may fetch a received file, and what it is served as. The sender is
/// hostile: its name and its bytes must never make the page run, render or mislabel it.
final class WebReceivedFileTests: XCTestCase {
    let port = 43210
    let key = WebSignInKey.random()
    let id: Substring = "0123456789abcdef0123456789abcdef"

    func decide(
        _ path: Substring, method: String = "GET", origin: Substring? = nil, fetchSite: Substring? = "same-origin",
        auth: Substring? = nil, host: Substring = "127.0.0.1:43210"
    ) -> WebRequestDecision {
        WebRequestGuard.decide(
            WebRequestFacts(
                method: method, path: path, host: host, origin: origin, fetchSite: fetchSite, authHeader: auth),
            port: port, isUploadKey: key.isUploadKey)
    }

    var pageKey: Substring { Substring(key.uploadKey) }

    func testOnlyThePagesKeyFetchesAFile() {
        XCTAssertEqual(decide("/files/" + id, auth: pageKey), .receivedFile(id: String(id)))
        // Another local user: no key, a wrong one.
        XCTAssertEqual(decide("/files/" + id), .refuse(.notSignedIn))
        XCTAssertEqual(decide("/files/" + id, auth: String(repeating: "0", count: 64)[...]), .refuse(.notSignedIn))
        // Another site's page, DNS rebinding: refused before the key is looked at.
        XCTAssertEqual(decide("/files/" + id, origin: "http://evil.example", auth: pageKey), .refuse(.crossSite))
        XCTAssertEqual(decide("/files/" + id, fetchSite: "same-site", auth: pageKey), .refuse(.crossSite))
        XCTAssertEqual(decide("/files/" + id, fetchSite: "cross-site", auth: pageKey), .refuse(.crossSite))
        XCTAssertEqual(decide("/files/" + id, auth: pageKey, host: "evil.example:43210"), .refuse(.wrongHost))
        // Nothing but GET (no CORS preflight is ever answered).
        for method in ["POST", "OPTIONS", "PUT", "DELETE", "HEAD"] {
            XCTAssertEqual(
                decide("/files/" + id, method: method, origin: "http://127.0.0.1:43210", auth: pageKey),
                .refuse(.methodNotAllowed), method)
        }
    }

    func testOnlyAFullTransferIDNamesAFile() {
        for path: Substring in [
            "/files/", "/files/0123", "/files/" + id + "0", "/files/0123456789ABCDEF0123456789ABCDEF",
            "/files/../../etc/passwd", "/files/" + id + "/x", "/files/%30123456789abcdef0123456789abcdef"
        ] {
            XCTAssertNil(WebReceivedFile.id(inPath: path), String(path))
            XCTAssertEqual(decide(path, auth: pageKey), .refuse(.notFound), String(path))
        }
    }

    func testTheTypeComesFromTheBytesOnly() {
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]
        XCTAssertEqual(WebRasterType.detect(png), .png)
        XCTAssertEqual(WebRasterType.detect([0xFF, 0xD8, 0xFF, 0xE0]), .jpeg)
        XCTAssertEqual(WebRasterType.detect(Array("GIF89a".utf8)), .gif)
        XCTAssertEqual(WebRasterType.detect(Array("GIF87a".utf8)), .gif)
        XCTAssertEqual(WebRasterType.detect(Array("RIFF\0\0\0\0WEBPVP8 ".utf8)), .webp)
        for bytes in [
            Array("<!doctype html><script>".utf8), Array("<svg onload=alert(1)>".utf8), Array("RIFF\0\0\0\0AVI ".utf8),
            Array(png.prefix(7)), [0xFF, 0xD8], Array("GIF8".utf8), [], Array("%PDF-1.7".utf8)
        ] {
            XCTAssertNil(WebRasterType.detect(bytes), "\(bytes)")
        }
        // An HTML file named photo.png is served as bytes; a PNG named .txt as a PNG.
        let html = WebReceivedFile.headers(name: "photo.png", prefix: Array("<html><script>".utf8))
        XCTAssertEqual(value("Content-Type", html), "application/octet-stream")
        XCTAssertEqual(value("Content-Type", WebReceivedFile.headers(name: "notes.txt", prefix: png)), "image/png")
    }

    func testEveryFileResponseIsAnAttachmentThatCannotRunOrBeSniffed() {
        for prefix in [Array("<html>".utf8), [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]] {
            let headers = WebReceivedFile.headers(name: "x.html", prefix: prefix)
            XCTAssertTrue(value("Content-Disposition", headers)?.hasPrefix("attachment;") == true)
            XCTAssertEqual(value("X-Content-Type-Options", headers), "nosniff")
            XCTAssertTrue(value("Content-Security-Policy", headers)?.hasPrefix("sandbox;") == true)
            XCTAssertTrue(value("Content-Security-Policy", headers)?.contains("default-src 'none'") == true)
            XCTAssertEqual(value("Cache-Control", headers), "no-store")
            XCTAssertNil(value("Access-Control-Allow-Origin", headers))
        }
    }

    func testTheSendersNameCannotBreakTheHeader() {
        XCTAssertEqual(
            WebReceivedFile.contentDisposition(name: "report.pdf"),
            "attachment; filename=\"report.pdf\"; filename*=UTF-8''report.pdf")
        XCTAssertEqual(
            WebReceivedFile.contentDisposition(name: "Über uns é.txt"),
            "attachment; filename=\"_ber uns _.txt\"; filename*=UTF-8''%C3%9Cber%20uns%20%C3%A9.txt")
        // A quote, CR LF (a second header), a path, a bidi override, a leading dot.
        let hostile = "../../.\"a\"\r\nSet-Cookie: x=1;\u{202E}gnp.exe"
        let header = WebReceivedFile.contentDisposition(name: hostile)
        XCTAssertFalse(header.contains("\r") || header.contains("\n") || header.contains("\u{202E}"), header)
        let quoted = header.split(separator: ";", maxSplits: 1)[1]
        let fallback = quoted.drop(while: { $0 != "\"" }).dropFirst().prefix(while: { $0 != "\"" })
        XCTAssertFalse(fallback.contains("/") || fallback.hasPrefix("."), header)
        XCTAssertTrue(header.hasSuffix("gnp.exe"), header)
        XCTAssertEqual(header.filter { $0 == "\"" }.count, 2, header)
        XCTAssertTrue(
            WebReceivedFile.contentDisposition(name: "").hasSuffix("filename*=UTF-8''\(WebUploadName.fallback)"))
    }

    func value(_ name: String, _ headers: [(name: String, value: String)]) -> String? {
        headers.first(where: { $0.name.lowercased() == name.lowercased() })?.value
    }
}
