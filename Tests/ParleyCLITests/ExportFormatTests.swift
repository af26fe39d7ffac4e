import Foundation
import ParleyControlProtocol
import XCTest

@testable import parley

final class ExportFormatTests: XCTestCase {
    private let outgoing = MessageInfo(
        id: "00ff", from: "aaaa-aaaa", fromName: "alice", to: "bbbb-bbbb", toName: "bob", direction: .outgoing,
        sequence: 7, createdAt: 1_767_225_600_000, body: "two\nlines", state: .delivered,
        deliveredAt: 1_767_225_601_000, cursor: 42, readAt: 1_767_225_602_000)

    func testJSONRecordHasTheDocumentedKeys() throws {
        let data = try ControlJSON.encoder().encode(ExportedMessage(outgoing))
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: data) as? [String: Any])
        XCTAssertEqual(
            Set(object.keys),
            [
                "cursor", "id", "direction", "peer", "peerName", "from", "fromName", "to", "toName", "sequence",
                "createdAt", "state", "deliveredAt", "readAt", "body", "room", "replyTo", "editedAt", "deletedAt",
                "reactions"
            ])
        XCTAssertTrue(object["room"] is NSNull, "a direct message has room null")
        XCTAssertEqual(
            object["peer"] as? String, "bbbb-bbbb", "the other party of an outgoing message is its recipient")
        XCTAssertEqual(object["direction"] as? String, "out")
        var incoming = outgoing
        incoming.direction = .incoming
        incoming.deliveredAt = nil
        let decoded =
            try JSONSerialization.jsonObject(with: ControlJSON.encoder().encode(ExportedMessage(incoming)))
            as? [String: Any]
        XCTAssertEqual(decoded?["peerName"] as? String, "alice")
        XCTAssertTrue(decoded?["deliveredAt"] is NSNull, "empty fields are null, not absent")
    }

    func testConversationFieldsInTheExport() throws {
        var m = outgoing
        m.replyTo = MessageQuote(id: "11ee", fromName: "bob", excerpt: "question", deleted: false)
        m.editedAt = 5
        m.reactions = [MessageReaction(reaction: "👍", fromNames: ["alice", "bob"], mine: true)]
        let object = try XCTUnwrap(
            JSONSerialization.jsonObject(with: ControlJSON.encoder().encode(ExportedMessage(m)))
                as? [String: Any])
        XCTAssertEqual(object["replyTo"] as? String, "11ee")
        XCTAssertEqual(object["editedAt"] as? Int, 5)
        XCTAssertEqual(object["reactions"] as? [String: Int], ["👍": 2])
        XCTAssertTrue(object["deletedAt"] is NSNull)
        let lines = TranscriptFormat.lines(m, time: { _ in "T" })
        XCTAssertTrue(lines.contains { $0.contains("↳ bob: question") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("lines (edited)") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.contains("👍 2") }, "\(lines)")
        m.deletedAt = 6
        m.body = ""
        XCTAssertTrue(TranscriptFormat.lines(m, time: { _ in "T" }).joined().contains("(deleted)"))
    }

    func testRoomContextInExportAndTranscript() throws {
        var m = outgoing
        m.room = MessageRoom(id: "ab" + String(repeating: "0", count: 30), name: "lab")
        let object = try XCTUnwrap(
            JSONSerialization.jsonObject(with: ControlJSON.encoder().encode(ExportedMessage(m))) as? [String: Any])
        XCTAssertEqual((object["room"] as? [String: Any])?["name"] as? String, "lab")
        XCTAssertEqual(TranscriptFormat.lines(m, time: { _ in "T" }).first, "T  #lab alice: two")
        XCTAssertEqual(
            TranscriptFormat.header(me: "bob", peer: "#lab", exportedAt: "now").first,
            "Parley transcript: room #lab, as kept by bob; exported now.")
    }

    func testTranscriptLines() {
        let lines = TranscriptFormat.lines(outgoing, time: { _ in "T" })
        XCTAssertEqual(lines, ["T  alice → bob: two", "                lines  [read]"])
        var hostile = outgoing
        hostile.fromName = "mal\u{1B}lory"
        hostile.direction = .incoming
        XCTAssertEqual(TranscriptFormat.lines(hostile, time: { _ in "T" }).first, "T  mal\u{FFFD}lory → bob: two")
        XCTAssertEqual(
            TranscriptFormat.timestamp(1_767_225_600_000, timeZone: TimeZone(identifier: "UTC")!),
            "2026-01-01 00:00:00")
    }
}
