import Foundation
import NIOCore
import ParleyControlProtocol
import XCTest

@testable import ParleyWeb
@testable import ParleyWebCore

/// Sending a file from the page: the upload's name, parameters and limits, the guard on
/// `POST /upload`, the staging directory, and when a staged copy is deleted.
final class WebUploadTests: XCTestCase {
    // MARK: the name

    func testPathTricksInTheNameLeaveOneHarmlessComponent() {
        XCTAssertEqual(WebUploadName.sanitize("../../x"), "x")
        XCTAssertEqual(WebUploadName.sanitize("/etc/passwd"), "passwd")
        XCTAssertEqual(WebUploadName.sanitize("..\\..\\windows\\evil.txt"), "evil.txt")
        XCTAssertEqual(WebUploadName.sanitize(".."), WebUploadName.fallback)
        XCTAssertEqual(WebUploadName.sanitize("."), WebUploadName.fallback)
        XCTAssertEqual(WebUploadName.sanitize(""), WebUploadName.fallback)
        XCTAssertEqual(WebUploadName.sanitize("a/b/"), "b")
        XCTAssertEqual(WebUploadName.sanitize(".bashrc"), "bashrc", "no hidden file")
        XCTAssertEqual(WebUploadName.sanitize("-rf"), "rf", "not read as an option")
        XCTAssertEqual(WebUploadName.sanitize("report.pdf. . "), "report.pdf")
    }

    func testControlAndInvisibleCharactersAreRemoved() {
        XCTAssertEqual(WebUploadName.sanitize("a\u{0}b\nc\u{1B}[31md\u{7F}e\u{85}.txt"), "abc[31mde.txt")
        XCTAssertEqual(WebUploadName.sanitize("photo\u{202E}gnp.exe"), "photognp.exe")
        XCTAssertEqual(WebUploadName.sanitize("zero\u{200B}width\u{FEFF}\u{2066}.png"), "zerowidth.png")
        XCTAssertEqual(
            WebUploadName.sanitize("<img src=x onerror=alert(1)>.png"), "<img src=x onerror=alert(1)>.png",
            "HTML is the page's business (shown as text), not the file system's")
    }

    func testALongNameIsCutBetweenCharactersKeepingItsExtension() {
        let long = String(repeating: "é", count: 300) + ".jpeg"
        let name = WebUploadName.sanitize(long)
        XCTAssertLessThanOrEqual(name.utf8.count, WebLimits.maxUploadNameBytes)
        XCTAssertTrue(name.hasSuffix("é.jpeg"))
        XCTAssertEqual(String(decoding: Array(name.utf8), as: UTF8.self), name, "valid UTF-8")
        let noExtension = WebUploadName.sanitize(String(repeating: "a", count: 1000))
        XCTAssertEqual(noExtension.utf8.count, WebLimits.maxUploadNameBytes)
    }

    // MARK: the request

    func testTheQueryIsDecodedAndTheNameSanitized() throws {
        let ok = try WebUploadRequest.parse(
            query: "to=%23abc123&name=..%2F..%2Fx%20y.txt&caption=hello+there%21", contentLength: 5
        ).get()
        XCTAssertEqual(ok, WebUploadRequest(to: "#abc123", name: "x y.txt", caption: "hello there!", size: 5))
        let noCaption = try WebUploadRequest.parse(query: "name=a&to=bob&caption=", contentLength: 0).get()
        XCTAssertNil(noCaption.caption)
    }

    func testBadRequestsAreRefusedBeforeTheBodyIsRead() {
        func refusal(_ query: Substring?, _ length: Int64?) -> WebUploadError? {
            if case .failure(let error) = WebUploadRequest.parse(query: query, contentLength: length) { return error }
            return nil
        }
        XCTAssertEqual(refusal("to=bob&name=a", nil), .lengthRequired)
        XCTAssertEqual(
            refusal("to=bob&name=a", Int64(WebLimits.maxUploadBytes) + 1),
            .tooLarge(size: Int64(WebLimits.maxUploadBytes) + 1))
        XCTAssertNil(refusal("to=bob&name=a", Int64(WebLimits.maxUploadBytes)), "the limit itself is allowed")
        XCTAssertNotNil(refusal("to=bob&name=a", -1))
        XCTAssertNotNil(refusal(nil, 1))
        XCTAssertNotNil(refusal("name=a", 1), "no recipient")
        XCTAssertNotNil(refusal("to=bob", 1), "no name")
        XCTAssertNotNil(refusal("to=bob&name=a&path=/etc/passwd", 1), "no path from the page")
        XCTAssertNotNil(refusal("to=bob&to=carol&name=a", 1))
        XCTAssertNotNil(refusal("to=bob&name=%ZZ", 1))
        XCTAssertNotNil(refusal("to=bob&name=a%00b", 1))
        let caption = String(repeating: "c", count: WebLimits.maxUploadCaptionBytes + 1)
        XCTAssertNotNil(refusal(Substring("to=bob&name=a&caption=\(caption)"), 1))
        XCTAssertNotNil(
            refusal(Substring("to=bob&name=" + String(repeating: "a", count: WebLimits.maxUploadQueryBytes)), 1))
    }

    func testAdmissionChecksEveryLimit() {
        let gib: Int64 = 1 << 30
        XCTAssertNil(WebUploadAdmission.check(size: 10, activeUploads: 0, stagedBytes: 0, freeBytes: 10 * gib))
        XCTAssertEqual(
            WebUploadAdmission.check(
                size: 10, activeUploads: WebLimits.maxConcurrentUploads, stagedBytes: 0, freeBytes: 10 * gib),
            .tooManyUploads)
        XCTAssertEqual(
            WebUploadAdmission.check(
                size: gib, activeUploads: 0, stagedBytes: WebLimits.maxStagingBytes - gib + 1, freeBytes: 100 * gib),
            .stagingFull(staged: WebLimits.maxStagingBytes - gib + 1))
        XCTAssertNil(
            WebUploadAdmission.check(
                size: gib, activeUploads: 0, stagedBytes: WebLimits.maxStagingBytes - gib, freeBytes: 100 * gib))
        let free = WebLimits.minFreeBytesAfterUpload + 99
        XCTAssertEqual(
            WebUploadAdmission.check(size: 100, activeUploads: 0, stagedBytes: 0, freeBytes: free),
            .diskFull(free: free))
        XCTAssertNil(WebUploadAdmission.check(size: 99, activeUploads: 0, stagedBytes: 0, freeBytes: free))
        XCTAssertEqual(
            WebUploadAdmission.check(size: gib + 1, activeUploads: 0, stagedBytes: 0, freeBytes: 100 * gib),
            .tooLarge(size: gib + 1))
    }

    func testEveryErrorHasAStatusAndASentenceThatSaysWhatToDo() {
        let all: [WebUploadError] = [
            .tooLarge(size: 5 << 30), .lengthRequired, .incomplete(received: 1, expected: 2), .tooManyUploads,
            .stagingFull(staged: 1), .diskFull(free: 1), .badRequest("x"), .stagingFailed("x"),
            .sendRefused(code: -32000, message: "peer not found"), .daemonUnavailable("x")
        ]
        for error in all {
            XCTAssertTrue((400...599).contains(error.status), "\(error)")
            XCTAssertFalse(error.message.isEmpty)
        }
        XCTAssertTrue(WebUploadError.tooLarge(size: 5 << 30).message.contains("5 GiB"))
        XCTAssertTrue(WebUploadError.tooLarge(size: 5 << 30).message.contains("parley send"))
        XCTAssertEqual(WebByteCount.text(1536), "1.5 KiB")
        XCTAssertEqual(WebByteCount.text(1 << 30), "1 GiB")
        XCTAssertEqual(WebByteCount.text(12), "12 bytes")
    }

    // MARK: the guard

    let port = 43210
    let key = WebSignInKey.random()
    var auth: Substring { Substring(key.uploadKey) }

    func decide(
        method: String = "POST", path: Substring = "/upload", origin: Substring?, auth: Substring?,
        fetchSite: Substring? = "same-origin"
    ) -> WebRequestDecision {
        WebRequestGuard.decide(
            WebRequestFacts(
                method: method, path: path, query: "to=bob&name=a", host: "127.0.0.1:43210", origin: origin,
                fetchSite: fetchSite, authHeader: auth),
            port: port, isUploadKey: key.isUploadKey)
    }

    func testOnlyThePagesOwnSignedInPostUploads() {
        let ours: Substring = "http://127.0.0.1:43210"
        XCTAssertEqual(decide(origin: ours, auth: auth), .upload(query: "to=bob&name=a"))
        XCTAssertEqual(decide(origin: ours, auth: nil), .refuse(.notSignedIn), "another local user: no key")
        XCTAssertEqual(
            decide(origin: ours, auth: Substring(WebSignInKey.random().uploadKey)), .refuse(.notSignedIn),
            "another run's key")
        XCTAssertEqual(decide(origin: ours, auth: Substring(key.secret.text)), .refuse(.notSignedIn), "not the secret")
        XCTAssertEqual(decide(origin: "http://evil.example", auth: auth), .refuse(.crossSite), "CSRF")
        XCTAssertEqual(decide(origin: "null", auth: auth), .refuse(.crossSite))
        XCTAssertEqual(decide(origin: nil, auth: auth), .refuse(.crossSite), "no Origin: not our page")
        XCTAssertEqual(decide(origin: ours, auth: auth, fetchSite: "cross-site"), .refuse(.crossSite))
        XCTAssertEqual(decide(method: "GET", origin: ours, auth: auth), .refuse(.methodNotAllowed))
        XCTAssertEqual(decide(method: "PUT", origin: ours, auth: auth), .refuse(.methodNotAllowed))
        XCTAssertEqual(decide(path: "/", origin: ours, auth: auth), .refuse(.methodNotAllowed), "POST elsewhere")
        XCTAssertEqual(decide(path: "/upload/", origin: ours, auth: auth), .refuse(.methodNotAllowed))
    }

    func testThePageCannotSendAPathButCanActOnTransfers() {
        XCTAssertFalse(WebMethodPolicy.isAllowed("files.send"), "files.send takes any path: only through /upload")
        for method in ["files.list", "files.accept", "files.reject", "files.cancel", "files.thumbnail"] {
            XCTAssertTrue(WebMethodPolicy.isAllowed(method), method)
        }
    }

    // MARK: cleanup

    func entry(ageSeconds: Int64, ids: [String]?, uploading: Bool = false) -> (WebStagedEntry, Int64) {
        let now: Int64 = 1_800_000_000_000
        return (WebStagedEntry(createdAtMs: now - ageSeconds * 1000, transferIDs: ids, uploading: uploading), now)
    }

    func testAStagedFileGoesWhenEveryTransferEnded() {
        let (e, now) = entry(ageSeconds: 10, ids: ["a", "b"])
        for final in ["completed", "failed", "cancelled", "rejected"] {
            XCTAssertEqual(
                WebStagingCleanup.decide(e, states: ["a": final, "b": "completed"], nowMs: now),
                .remove(.transfersEnded))
        }
        XCTAssertEqual(WebStagingCleanup.decide(e, states: ["a": "completed", "b": "transferring"], nowMs: now), .keep)
        XCTAssertEqual(WebStagingCleanup.decide(e, states: ["a": "offered", "b": "completed"], nowMs: now), .keep)
        XCTAssertEqual(WebStagingCleanup.decide(e, states: ["a": "completed"], nowMs: now), .keep, "b not asked")
        XCTAssertEqual(WebStagingCleanup.decide(e, states: [:], nowMs: now), .keep, "daemon unreachable")
        XCTAssertEqual(
            WebStagingCleanup.decide(e, states: ["a": String?.none, "b": String?.none], nowMs: now),
            .remove(.transfersEnded),
            "forgotten by the daemon")
    }

    func testOnlyEventsThatEndATransferWakeTheSweep() {
        XCTAssertEqual(WebStagingCleanup.sweepingEvents, ["file.completed", "file.failed", "file.cancelled"])
        for event in WebStagingCleanup.sweepingEvents {
            XCTAssertTrue(ControlEvent.all.contains(event), event)
        }
    }

    func testAgeBoundsEverything() {
        let old = WebLimits.maxStagedAgeSeconds + 1
        for uploading in [false, true] {
            let (e, now) = entry(ageSeconds: old, ids: uploading ? nil : ["a"], uploading: uploading)
            XCTAssertEqual(WebStagingCleanup.decide(e, states: ["a": "transferring"], nowMs: now), .remove(.tooOld))
        }
        let (running, now) = entry(ageSeconds: WebLimits.orphanGraceSeconds + 10, ids: nil, uploading: true)
        XCTAssertEqual(
            WebStagingCleanup.decide(running, states: [:], nowMs: now), .keep, "a slow upload is not an orphan")
        let (young, _) = entry(ageSeconds: 5, ids: nil)
        XCTAssertEqual(
            WebStagingCleanup.decide(young, states: [:], nowMs: now), .keep, "maybe another parley web's upload")
        let (orphan, _) = entry(ageSeconds: WebLimits.orphanGraceSeconds + 1, ids: nil)
        XCTAssertEqual(WebStagingCleanup.decide(orphan, states: [:], nowMs: now), .remove(.orphan))
    }

    // MARK: the staging directory (real files in a temporary directory)

    func makeRoot() throws -> String {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("webupload-\(UUID().uuidString)").path
        addTeardownBlock { try? FileManager.default.removeItem(atPath: base) }
        return base + "/cache/parley/web-uploads"
    }

    func body(_ chunks: [[UInt8]]) -> AsyncStream<ByteBuffer> {
        AsyncStream { continuation in
            for chunk in chunks { continuation.yield(ByteBuffer(bytes: chunk)) }
            continuation.finish()
        }
    }

    func contents(_ dir: String) -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] }

    func testAnUploadIsStagedPrivatelyAndAFailedOneLeavesNothing() async throws {
        let root = try makeRoot()
        let staging = try WebUploadStaging(root: root)
        var st = stat()
        XCTAssertEqual(stat(root, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)

        let upload = WebUploadRequest(to: "bob", name: "x.txt", caption: nil, size: 6)
        let ticket = try staging.begin(upload, nowMs: 0).get()
        try await staging.write(body([[1, 2, 3], [4, 5, 6]]), size: 6, to: ticket)
        XCTAssertEqual(FileManager.default.contents(atPath: ticket.file), Data([1, 2, 3, 4, 5, 6]))
        XCTAssertEqual(stat(ticket.file, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o600)
        XCTAssertEqual(stat(ticket.directory, &st), 0)
        XCTAssertEqual(st.st_mode & 0o777, 0o700)
        XCTAssertTrue(ticket.file.hasPrefix(root + "/") && ticket.file.hasSuffix("/x.txt"))
        XCTAssertEqual(staging.usage.bytes, 6)

        // Cut short, and longer than declared: an error, and abandon removes all of it.
        for chunks in [[[UInt8](repeating: 0, count: 3)], [[UInt8](repeating: 0, count: 7)]] {
            let t = try staging.begin(upload, nowMs: 0).get()
            do throws(WebUploadError) {
                try await staging.write(body(chunks), size: 6, to: t)
                XCTFail("accepted \(chunks[0].count) bytes for 6")
            } catch {
                XCTAssertTrue(error == .incomplete(received: 3, expected: 6) || error == .tooLarge(size: 7), "\(error)")
            }
            staging.abandon(t)
            XCTAssertFalse(FileManager.default.fileExists(atPath: t.directory))
        }
        XCTAssertEqual(contents(root).count, 1, "only the good upload is left")
        XCTAssertEqual(staging.usage.bytes, 6)
    }

    func testLimitsAreCheckedBeforeAnythingIsWritten() throws {
        let root = try makeRoot()
        let staging = try WebUploadStaging(root: root)
        let upload = WebUploadRequest(to: "bob", name: "x", caption: nil, size: 1)
        var tickets: [WebUploadStaging.Ticket] = []
        for _ in 0..<WebLimits.maxConcurrentUploads { tickets.append(try staging.begin(upload, nowMs: 0).get()) }
        guard case .failure(.tooManyUploads) = staging.begin(upload, nowMs: 0) else { return XCTFail() }
        XCTAssertEqual(contents(root).count, WebLimits.maxConcurrentUploads, "the refused one made no directory")
        for t in tickets { staging.abandon(t) }
        XCTAssertEqual(contents(root), [])
        let huge = WebUploadRequest(to: "bob", name: "x", caption: nil, size: 1 << 62)
        guard case .failure = staging.begin(huge, nowMs: 0) else { return XCTFail() }
        XCTAssertEqual(contents(root), [])
    }

    func testTheSweepRemovesEndedTransfersAndALaterRunCleansUpAfterThisOne() async throws {
        let root = try makeRoot()
        let staging = try WebUploadStaging(root: root)
        let upload = WebUploadRequest(to: "bob", name: "a.bin", caption: nil, size: 1)
        let done = try staging.begin(upload, nowMs: 0).get()
        try await staging.write(body([[7]]), size: 1, to: done)
        staging.sent(done, transferIDs: ["aaaa"])
        let waiting = try staging.begin(upload, nowMs: 0).get()
        try await staging.write(body([[8]]), size: 1, to: waiting)
        staging.sent(waiting, transferIDs: ["bbbb"])
        XCTAssertEqual(Set(staging.transferIDsToCheck), ["aaaa", "bbbb"])
        XCTAssertEqual(staging.sweep(states: ["aaaa": "completed", "bbbb": "transferring"], nowMs: 1000), [done.key])
        XCTAssertFalse(FileManager.default.fileExists(atPath: done.directory))
        XCTAssertTrue(FileManager.default.fileExists(atPath: waiting.file))

        // A leftover with no transfers (this process died mid-upload) and the one still
        // waiting: a new `parley web` adopts both.
        XCTAssertEqual(mkdir(root + "/0123456789abcdef", 0o700), 0)
        XCTAssertEqual(mkdir(root + "/not-ours", 0o700), 0)
        let later = try WebUploadStaging(root: root)
        XCTAssertEqual(later.transferIDsToCheck, ["bbbb"])
        let now = WebStagingCleanupTestsClock.nowMs()
        XCTAssertEqual(later.sweep(states: ["bbbb": "transferring"], nowMs: now), [], "young orphan kept")
        XCTAssertEqual(
            Set(later.sweep(states: ["bbbb": "cancelled"], nowMs: now + WebLimits.orphanGraceSeconds * 1000 + 5000)),
            [waiting.key, "0123456789abcdef"])
        XCTAssertEqual(contents(root), ["not-ours"], "only its own entries are touched")
    }

    func testAStagingDirectoryOthersCanEnterIsRefused() throws {
        let root = try makeRoot()
        _ = try WebUploadStaging(root: root)
        chmod(root, 0o755)
        XCTAssertThrowsError(try WebUploadStaging(root: root))
    }
}

enum WebStagingCleanupTestsClock {
    static func nowMs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
