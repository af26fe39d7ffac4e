import XCTest

@testable import parley

/// `parley notify`'s pure parts: what a notification says, when it is shown, and the D-Bus
/// bytes. The real session bus and a notification server are in
/// Tests/system/test_notify.py.
final class NotificationTextTests: XCTestCase {
    func testBodyMarkupIsEscaped() {
        XCTAssertEqual(
            NotificationText.escapedBody(#"<b>hi</b> & <a href="http://x">click</a> <img src="file:///etc/passwd"/>"#),
            #"&lt;b&gt;hi&lt;/b&gt; &amp; &lt;a href="http://x"&gt;click&lt;/a&gt; &lt;img src="file:///etc/passwd"/&gt;"#
        )
        XCTAssertEqual(NotificationText.escapedBody("&amp;"), "&amp;amp;", "an entity shows as typed")
        XCTAssertEqual(NotificationText.escapedBody("two\nlines"), "two\nlines")
    }

    func testAServerWithoutMarkupGetsTheTextAsItIs() {
        XCTAssertEqual(NotificationText.body("<b>x</b> & y", serverRendersMarkup: false), "<b>x</b> & y")
        XCTAssertEqual(NotificationText.body("<b>x</b> & y", serverRendersMarkup: true), "&lt;b&gt;x&lt;/b&gt; &amp; y")
        XCTAssertEqual(NotificationText.body("a\u{202E}b", serverRendersMarkup: false), "ab")
    }

    func testControlAndDirectionCharactersAreRemovedAndTextIsCut() {
        XCTAssertEqual(NotificationText.plain("evil\u{202E}gnp.exe\u{0007}\u{200B}"), "evilgnp.exe")
        XCTAssertEqual(NotificationText.plain("a\nb\tc"), "a b c")
        let long = String(repeating: "x", count: 1000)
        XCTAssertLessThanOrEqual(NotificationText.escapedBody(long).count, NotificationText.maxBodyCharacters + 1)
        XCTAssertLessThanOrEqual(NotificationText.plain(long).count, NotificationText.maxTitleCharacters + 1)
        let manyLines = Array(repeating: "line", count: 500).joined(separator: "\n")
        XCTAssertLessThanOrEqual(NotificationText.escapedBody(manyLines).count, NotificationText.maxBodyCharacters + 8)
    }

    func testAnUnverifiedSenderShowsTheStartOfTheFingerprint() {
        let fp = "abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567"
        XCTAssertEqual(NotificationText.sender(name: "alice", fingerprint: fp, verified: false), "alice (abcd-efgh)")
        XCTAssertEqual(NotificationText.sender(name: "alice", fingerprint: fp, verified: true), "alice")
        XCTAssertEqual(
            NotificationText.sender(name: "ali\u{202E}ce\n", fingerprint: fp, verified: false), "alice  (abcd-efgh)")
    }
}

final class NotificationPlannerTests: XCTestCase {
    func message(_ from: String, _ body: String) -> NotificationPlanner.Incoming {
        .init(key: "peer:\(from)", title: from, body: body)
    }

    func testABurstShowsThenAFloodBecomesOneSummaryPerInterval() {
        var planner = NotificationPlanner(now: 0)
        var shown: [NotificationPlanner.Show] = []
        for i in 0..<3 { shown += [planner.receive(message("alice", "m\(i)"), now: 0)].compactMap { $0 } }
        XCTAssertEqual(shown.count, 3, "a short burst shows at once")
        for i in 0..<1000 { XCTAssertNil(planner.receive(message("mallory", "flood \(i)"), now: 1)) }
        XCTAssertNil(planner.tick(now: 1), "no token yet")
        let next = try? XCTUnwrap(planner.nextTick())
        XCTAssertEqual(next ?? 0, NotificationPlanner.refillSeconds, accuracy: 0.001)
        let summary = planner.tick(now: NotificationPlanner.refillSeconds)
        XCTAssertEqual(summary?.key, "peer:mallory")
        XCTAssertEqual(summary?.body.hasPrefix("1000 new messages. The latest: flood 999"), true)
        XCTAssertNil(planner.nextTick(), "nothing waits any more")
        XCTAssertNil(planner.tick(now: 100))
    }

    func testASummaryOfSeveralConversationsNamesAFewAndCountsAll() {
        var planner = NotificationPlanner(now: 0)
        for i in 0..<3 { _ = planner.receive(message("x\(i)", "hi"), now: 0) }
        for i in 0..<10 { _ = planner.receive(message("p\(i % 5)", "hi \(i)"), now: 0) }
        let summary = planner.tick(now: 10)
        XCTAssertEqual(summary?.title, "Parley: 10 new messages")
        XCTAssertEqual(summary?.body, "From p0, p1, p2 and others.")
        XCTAssertEqual(summary?.key, "summary")
    }

    func testAQuietConversationShowsEachMessage() {
        var planner = NotificationPlanner(now: 0)
        for i in 0..<20 {
            XCTAssertNotNil(planner.receive(message("bob", "\(i)"), now: Double(i) * NotificationPlanner.refillSeconds))
        }
    }

    func testPendingConversationsAreBounded() {
        var planner = NotificationPlanner(now: 0)
        for i in 0..<3 { _ = planner.receive(message("x\(i)", "hi"), now: 0) }
        for i in 0..<10_000 { _ = planner.receive(message("sybil\(i)", "hi"), now: 0) }
        XCTAssertEqual(planner.tick(now: 10)?.title, "Parley: 10000 new messages")
    }
}

final class DBusMessageTests: XCTestCase {
    func testHelloIsTheSpecsLayout() throws {
        let hello = DBusMessage.methodCall(
            serial: 1, destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "Hello")
        XCTAssertEqual(Array(hello.prefix(4)), [UInt8(ascii: "l"), 1, 0, 1])
        XCTAssertEqual(Array(hello[4..<8]), [0, 0, 0, 0], "no body")
        XCTAssertEqual(Array(hello[8..<12]), [1, 0, 0, 0], "serial")
        XCTAssertEqual(hello.count % 8, 0)
        XCTAssertEqual(try DBusMessage.totalLength(ofHeader: Array(hello.prefix(16))), hello.count)
        // The first header field: PATH, signature "o", the path.
        XCTAssertEqual(Array(hello[16..<20]), [1, 1, UInt8(ascii: "o"), 0])
        XCTAssertEqual(Array(hello[20..<24]), [21, 0, 0, 0])
        XCTAssertEqual(String(decoding: hello[24..<45], as: UTF8.self), "/org/freedesktop/DBus")
    }

    func testAReplyIsParsed() throws {
        // A METHOD_RETURN for serial 7 with signature "u" and body 42, as a bus would send.
        var w = DBusWriter()
        w.byte(UInt8(ascii: "l"))
        w.byte(2)
        w.byte(1)
        w.byte(1)
        w.uint32(4)
        w.uint32(99)
        w.array(elementAlignment: 8) { w in
            w.align(8)
            w.byte(5)
            w.signature("u")
            w.uint32(7)
            w.align(8)
            w.byte(8)
            w.signature("g")
            w.signature("u")
        }
        w.align(8)
        w.uint32(42)
        let reply = try DBusMessage.parse(w.bytes)
        XCTAssertEqual(reply.type, 2)
        XCTAssertEqual(reply.replySerial, 7)
        XCTAssertEqual(reply.signature, "u")
        XCTAssertEqual(reply.firstUInt32, 42)
    }

    func testCapabilitiesAreRead() throws {
        var body = DBusWriter()
        body.array(elementAlignment: 4) { w in
            for capability in ["body", "body-markup", "actions"] { w.string(capability) }
        }
        var reply = DBusMessage.Received(
            type: 2, replySerial: 1, errorName: nil, signature: "as", body: body.bytes, littleEndian: true)
        XCTAssertEqual(reply.stringArray, ["body", "body-markup", "actions"])
        reply.body = Array(body.bytes.prefix(12))
        XCTAssertNil(reply.stringArray, "cut short: nil, not a crash")
        reply.body = [0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0]
        XCTAssertNil(reply.stringArray)
    }

    func testHostileBytesAreErrorsNotCrashes() {
        XCTAssertThrowsError(try DBusMessage.totalLength(ofHeader: Array(repeating: 0, count: 16)))
        var huge = [UInt8(ascii: "l"), 2, 0, 1] + [0xFF, 0xFF, 0xFF, 0x7F] + [1, 0, 0, 0] + [0, 0, 0, 0]
        XCTAssertThrowsError(try DBusMessage.totalLength(ofHeader: huge))
        huge = [UInt8(ascii: "l"), 2, 0, 1] + [0, 0, 0, 0] + [1, 0, 0, 0] + [8, 0, 0, 0] + [5, 9, 9, 9, 9, 9, 9, 9]
        XCTAssertThrowsError(try DBusMessage.parse(huge))
    }

    func testBusAddresses() {
        XCTAssertEqual(DBusConnection.socketAddress("unix:path=/run/user/1000/bus")?.path, "/run/user/1000/bus")
        let abstract = DBusConnection.socketAddress("unix:abstract=/tmp/dbus-x,guid=1234")
        XCTAssertEqual(abstract?.path, "/tmp/dbus-x")
        XCTAssertEqual(abstract?.abstract, true)
        XCTAssertEqual(
            DBusConnection.socketAddress("tcp:host=x,port=1;unix:path=/tmp/a%20b")?.path, "/tmp/a b")
        XCTAssertNil(DBusConnection.socketAddress("tcp:host=x,port=1"))
    }
}
