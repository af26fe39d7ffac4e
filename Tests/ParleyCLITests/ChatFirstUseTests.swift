import ParleyControlProtocol
import XCTest

@testable import parley

/// What new users stumbled on in `parley chat` (issue 31): the pure parts.
final class ChatFirstUseTests: XCTestCase {
    private func message(
        _ id: String, _ direction: MessageDirection, _ body: String, cursor: Int, from: String = "bbbb-1111",
        at time: Int = 0
    ) -> MessageInfo {
        MessageInfo(
            id: id, from: from, fromName: "bob", to: "t", toName: "alice", direction: direction, sequence: cursor,
            createdAt: time, body: body, state: direction == .incoming ? .received : .delivered, deliveredAt: nil,
            cursor: cursor)
    }

    private func transfer(_ id: String, state: String, at time: Int = 0, room: String? = nil) -> FileTransferInfo {
        FileTransferInfo(
            id: id, direction: "out", peer: "bbbb-1111", peerName: "bob", room: room, name: "report.pdf", size: 1024,
            mediaType: "application/pdf", caption: nil, state: state, bytesDone: 0, rate: nil, path: nil, error: nil,
            contentHash: "", createdAt: time, updatedAt: time)
    }

    func testHelpAndNumberedActions() {
        XCTAssertEqual(ChatSlashCommand.parse("/help"), .help)
        XCTAssertEqual(ChatSlashCommand.parse("/?"), .help)
        XCTAssertEqual(ChatSlashCommand.parse("/reply 3 sure thing"), .reply(3, "sure thing"))
        XCTAssertEqual(ChatSlashCommand.parse("/react 2 👍"), .react(2, "👍"))
        XCTAssertEqual(ChatSlashCommand.parse("/edit 5 fixed"), .edit(5, "fixed"))
        XCTAssertEqual(ChatSlashCommand.parse("/delete 5"), .delete(5))
        XCTAssertEqual(ChatSlashCommand.parse("/reply 3"), .unknown("reply"), "a number alone is no reply")
        XCTAssertEqual(ChatSlashCommand.parse("/reply 3rd time"), .reply(nil, "3rd time"))
        XCTAssertEqual(ChatSlashCommand.parse("/delete x"), .unknown("delete"))
        XCTAssertTrue(ChatSlashCommand.helpText.contains("/reply [N] TEXT"))
    }

    func testMessagesAreNumberedAndActionsFindThemByNumber() {
        var model = ChatModel()
        model.add(message("a", .incoming, "first question", cursor: 1))
        model.add(message("b", .outgoing, "mine", cursor: 2))
        model.add(message("c", .incoming, "second question", cursor: 3))
        model.notice("bob is online", at: 0)
        XCTAssertEqual(model.entries.map(\.number), [1, 2, 3, nil])
        XCTAssertEqual(model.target(1, own: false, verb: "reply to"), .success("a"), "an older message, by number")
        XCTAssertEqual(model.target(nil, own: false, verb: "reply to"), .success("c"), "without one: the newest")
        XCTAssertEqual(model.target(2, own: true, verb: "edit"), .success("b"))
        XCTAssertEqual(
            model.target(1, own: true, verb: "edit"),
            .failure(.init("message [1] is not yours: you can only edit your own")))
        XCTAssertEqual(
            model.target(9, own: false, verb: "react to"),
            .failure(.init("no message [9] on screen; the number is shown beside each message")))
        let line = ChatLayout.lines(model.entries[0], width: 80, time: { _ in "12:00" })
        XCTAssertEqual(line, ["[1] 12:00 bob: first question"])
    }

    func testNamesAreColouredByKeyNotByName() {
        var model = ChatModel()
        model.add(message("a", .incoming, "hi", cursor: 1, from: "bbbb-1111"))
        model.add(message("b", .incoming, "hi", cursor: 2, from: "eeee-9999"))
        let first = ChatLayout.lines(model.entries[0], width: 80, time: { _ in "12:00" }, colour: true)[0]
        XCTAssertTrue(first.hasPrefix("[1] 12:00 " + NameColour.start(forKey: "bbbb-1111") + "bob" + NameColour.reset))
        XCTAssertTrue(first.hasSuffix(": hi"))
        XCTAssertEqual(NameColour.index(forKey: "bbbb-1111"), NameColour.index(forKey: "bbbb-1111"), "stable")
        let keys = (0..<40).map { "key-\($0)" }
        XCTAssertGreaterThan(Set(keys.map(NameColour.index)).count, 4, "keys spread over the palette")
        let plain = ChatLayout.lines(model.entries[1], width: 80, time: { _ in "12:00" })[0]
        XCTAssertFalse(plain.contains("\u{1B}"), "no colour unless asked")
    }

    func testAnAttachmentIsShownOncePerState() {
        var model = ChatModel()
        XCTAssertTrue(model.transfer(transfer("t1", state: "offered"), at: 0), "the answer to /attach")
        XCTAssertFalse(model.transfer(transfer("t1", state: "offered"), at: 1), "the event that follows it")
        XCTAssertTrue(model.transfer(transfer("t1", state: "completed"), at: 2))
        XCTAssertEqual(model.entries.count, 2)
    }

    func testHistoryShowsAttachmentsAmongMessagesInTimeOrder() {
        var model = ChatModel()
        model.addHistory(
            [
                message("a", .incoming, "before", cursor: 1, at: 100),
                message("b", .incoming, "after", cursor: 2, at: 300)
            ],
            transfers: [transfer("t0", state: "completed", at: 50), transfer("t1", state: "completed", at: 200)],
            complete: false)
        XCTAssertEqual(model.entries.map(\.body).count, 3, "a transfer older than the page stays out")
        XCTAssertEqual(model.entries[0].body, "before")
        XCTAssertTrue(model.entries[1].body.contains("report.pdf"))
        XCTAssertEqual(model.entries[2].body, "after")
        var all = ChatModel()
        all.addHistory(
            [message("a", .incoming, "before", cursor: 1, at: 100)],
            transfers: [transfer("t0", state: "completed", at: 50)], complete: true)
        XCTAssertEqual(all.entries.count, 2, "the whole conversation is on the page: every transfer")
    }

    func testStatusLine() {
        XCTAssertEqual(ChatStatusLine.presence(online: false, room: (members: 2, online: 2)), "all 2 members online")
        XCTAssertEqual(ChatStatusLine.presence(online: false, room: (members: 3, online: 1)), "1 of 3 members online")
        XCTAssertEqual(ChatStatusLine.presence(online: true, room: nil), "online")
        let text = ChatStatusLine.text(
            title: "#lab", presence: "all 2 members online", connected: true,
            unread: [.init(name: "carol", count: 1), .init(name: "#ops", count: 0)], newBelow: 2)
        XCTAssertEqual(
            text,
            "#lab · all 2 members online · ↓ 2 new messages below · unread: carol 1 · Enter sends · /help · Ctrl-C quits"
        )
        XCTAssertFalse(text.contains("offline"))
        let many = ChatStatusLine.text(
            title: "bob", presence: "online", connected: true,
            unread: (1...5).map { .init(name: "p\($0)", count: $0) }, newBelow: 0)
        XCTAssertTrue(many.contains("unread: p1 1, p2 2, p3 3, +9"), many)
    }

    func testRoomLookup() {
        func room(_ name: String, _ id: String, member: Bool = true) -> RoomInfo {
            RoomInfo(
                id: id, name: name, members: [], member: member, creator: "c", creatorName: "c", createdAt: 0,
                version: 1, queued: 0)
        }
        let rooms = [room("lab", "aaaa1111", member: false), room("lab", "bbbb2222"), room("Ops", "cccc3333")]
        XCTAssertEqual(ConversationLookup.findRoom("#lab", in: rooms)?.id, "bbbb2222", "the room we are in")
        XCTAssertEqual(ConversationLookup.findRoom("#ops", in: rooms)?.id, "cccc3333")
        XCTAssertEqual(ConversationLookup.findRoom("#aaaa", in: rooms)?.id, "aaaa1111")
        XCTAssertNil(ConversationLookup.findRoom("#nope", in: rooms))
    }
}
