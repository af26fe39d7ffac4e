import Foundation
import XCTest

@testable import ParleyWeb
@testable import ParleyWebCore

/// The page's files and headers: what makes injected text inert even if a bug let some in.
final class WebPageTests: XCTestCase {
    static let assetsDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/ParleyWebCore/Assets")

    func testGeneratedAssetsMatchTheSourceFiles() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.assetsDirectory.path).sorted()
        XCTAssertEqual(Set(files.map { "/" + $0 }), Set(WebAssets.generated.map(\.path)))
        for file in files {
            let onDisk = try Data(contentsOf: Self.assetsDirectory.appendingPathComponent(file))
            XCTAssertEqual(
                WebAssets.byPath["/" + file]?.bytes, [UInt8](onDisk),
                "\(file) changed: run scripts/gen-web-assets.py")
        }
        XCTAssertEqual(WebAssets.byPath["/"], WebAssets.byPath["/index.html"])
    }

    func testNoInlineScriptStyleOrHandlersInTheHTML() throws {
        let html = String(decoding: WebAssets.byPath["/index.html"]!.bytes, as: UTF8.self)
        let scripts = html.components(separatedBy: "<script").dropFirst()
        XCTAssertFalse(scripts.isEmpty)
        for script in scripts {
            let tag = script.prefix { $0 != ">" }
            XCTAssertTrue(tag.contains("src=\"/"), "inline script: \(tag)")
            XCTAssertTrue(script.dropFirst(tag.count + 1).hasPrefix("</script>"), "script with a body")
        }
        XCTAssertFalse(html.contains("<style"))
        XCTAssertNil(html.range(of: #"\sstyle\s*="#, options: .regularExpression))
        XCTAssertNil(html.range(of: #"\son[a-z]+\s*="#, options: .regularExpression))
        XCTAssertFalse(html.contains("http://") || html.contains("https://"), "no CDN")
    }

    func testTheScriptsNeverParseHTMLOrEvaluateText() {
        for (path, asset) in WebAssets.byPath where path.hasSuffix(".js") {
            let js = String(decoding: asset.bytes, as: UTF8.self)
            let code = js.split(separator: "\n").filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }
                .joined(separator: "\n")
            for sink in [
                "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                "setTimeout(\"", "createContextualFragment", "srcdoc", "DOMParser"
            ] {
                XCTAssertFalse(code.contains(sink), "\(path) uses \(sink)")
            }
        }
    }

    func testContentSecurityPolicyIsStrict() {
        let csp = WebSecurityHeaders.contentSecurityPolicy
        for directive in [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "img-src 'self' data: blob:",
            "frame-ancestors 'none'", "base-uri 'none'", "form-action 'none'"
        ] {
            XCTAssertTrue(csp.contains(directive), directive)
        }
        for loose in ["unsafe-inline", "unsafe-eval", "*", "http:", "ws:"] {
            XCTAssertFalse(csp.contains(loose), loose)
        }
        let names = Set(WebSecurityHeaders.all.map(\.name))
        for name in [
            "Content-Security-Policy", "X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options", "Cache-Control"
        ] {
            XCTAssertTrue(names.contains(name), name)
        }
        XCTAssertEqual(WebSecurityHeaders.all.first { $0.name == "Referrer-Policy" }?.value, "no-referrer")
        XCTAssertEqual(WebSecurityHeaders.all.first { $0.name == "X-Content-Type-Options" }?.value, "nosniff")
    }

    func testTheSignInFileIsPrivateAndChecksTheServerBeforeGoingThere() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-test-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = WebOpenFile(path: dir.appendingPathComponent("web.html").path)
        let secret = WebSecret.random()
        try file.write(port: 43210, secret: secret)
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        XCTAssertTrue(text.contains("http://127.0.0.1:43210/#k=\(secret.text)"))
        XCTAssertFalse(text.contains("http-equiv=\"refresh\""), "no going there before the server's proof")
        XCTAssertTrue(text.contains("crypto.subtle.verify") && text.contains(WebSignInKey.serverProofLabel))
        XCTAssertTrue(text.contains(#"join("\n")"#), "the proof's parts joined by a line feed, as the server does")
        let other = WebSecret.random()
        try file.write(port: 43211, secret: other)
        XCTAssertTrue(try String(contentsOfFile: file.path, encoding: .utf8).contains(other.text))
        file.remove()
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path))
    }

    func testAnOpenFileDirectoryOthersCanReadIsRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-open-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try FileManager.default.createDirectory(
            at: dir.appendingPathComponent("parley"), withIntermediateDirectories: true)
        chmod(dir.appendingPathComponent("parley").path, 0o755)
        XCTAssertThrowsError(try WebOpenFile.defaultPath(environment: ["XDG_RUNTIME_DIR": dir.path]))
        chmod(dir.appendingPathComponent("parley").path, 0o700)
        XCTAssertEqual(
            try WebOpenFile.defaultPath(environment: ["XDG_RUNTIME_DIR": dir.path]), dir.path + "/parley/web.html",
            "one name whatever the port")
    }

    func testAChosenSignInFileMustBeInADirectoryOthersCannotWrite() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-chosen-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        chmod(dir.path, 0o1777)
        XCTAssertThrowsError(try WebOpenFile.checkParentNotShared(dir.path + "/web.html"), "a /tmp-like directory")
        chmod(dir.path, 0o755)
        XCTAssertNoThrow(try WebOpenFile.checkParentNotShared(dir.path + "/web.html"))
    }

    func testASignInFileIsClaimedByOneParleyWebAtATime() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-web-claim-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = WebOpenFile(path: dir.appendingPathComponent("web.html").path)
        let first = try XCTUnwrap(WebOpenFile.Claim(file))
        XCTAssertNil(WebOpenFile.Claim(file), "a second parley web of the same person is refused")
        first.release()
        let again = try XCTUnwrap(WebOpenFile.Claim(file), "released (or its process died): free again")
        again.release()
    }
}
