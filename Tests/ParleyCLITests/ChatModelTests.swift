import ParleyControlProtocol
import XCTest

@testable import parley

final class ChatModelTests: XCTestCase {
    private func message(
        _ id: String, _ direction: MessageDirection, cursor: Int, state: MessageState = .received,
        readAt: Int? = nil
    ) -> MessageInfo {
        MessageInfo(
            id: id, from: "f", fromName: direction == .incoming ? "bob" : "alice", to: "t",
            toName: direction == .incoming ? "alice" : "bob", direction: direction, sequence: cursor,
            createdAt: cursor * 1000, body: "m\(id)", state: state, deliveredAt: nil, cursor: cursor, readAt: readAt)
    }

    func testEachMessageIsShownOnceWithItsMark() {
        var model = ChatModel()
        XCTAssertTrue(model.add(message("a", .incoming, cursor: 1)))
        XCTAssertTrue(model.add(message("b", .outgoing, cursor: 2, state: .queued)))
        XCTAssertTrue(model.add(message("c", .outgoing, cursor: 3, state: .delivered, readAt: 9)))
        XCTAssertFalse(model.add(message("a", .incoming, cursor: 1)), "history and a live event overlap")
        XCTAssertEqual(model.entries.map(\.id), ["a", "b", "c"])
        XCTAssertEqual(model.entries.map(\.mark), [nil, .queued, .read])
        XCTAssertEqual(model.newestIncomingCursor, 1)
    }

    func testMarksOnlyAdvanceAndMayArriveBeforeTheMessage() {
        var model = ChatModel()
        model.add(message("b", .outgoing, cursor: 2, state: .queued))
        model.mark("b", .read)
        model.mark("b", .delivered)
        XCTAssertEqual(model.entries.last?.mark, .read, "a late delivery event does not undo ✓✓")
        model.mark("early", .delivered)
        model.add(message("early", .outgoing, cursor: 3, state: .queued))
        XCTAssertEqual(model.entries.last?.mark, .delivered)
    }

    /// A room message some members hold shows who (issue 30), and the line follows the
    /// `message.updated` events as members come to hold it.
    func testARoomMessageShowsWhoHoldsIt() {
        var model = ChatModel()
        var m = message("r", .outgoing, cursor: 5, state: .queued)
        m.roomDelivery = RoomDelivery(members: 2, heldBy: [])
        model.add(m)
        XCTAssertEqual(model.entries.last?.mark, .queued)
        m.state = .partial
        m.roomDelivery = RoomDelivery(members: 2, heldBy: [MessageHolder(fingerprint: "c", name: "carol", at: 1)])
        model.update(m)
        XCTAssertEqual(model.entries.last?.mark, .partial)
        XCTAssertEqual(model.entries.last?.holders, "carol has it (1 of 2)")
        let line = ChatLayout.lines(model.entries[0], width: 80, time: { _ in "t" }).joined()
        XCTAssertTrue(line.hasSuffix("mr ✓… carol has it (1 of 2)"), line)
        model.mark("r", .delivered)
        XCTAssertEqual(model.entries.last?.mark, .delivered)
        XCTAssertFalse(
            ChatLayout.lines(model.entries[0], width: 80, time: { _ in "t" }).joined().contains("has it"),
            "every member has it: just ✓")
    }

    func testOlderHistoryGoesAboveWhatIsShown() {
        var model = ChatModel()
        model.add(message("c", .incoming, cursor: 30))
        model.add(message("d", .outgoing, cursor: 40, state: .delivered))
        XCTAssertEqual(model.oldestCursor, 30)
        XCTAssertEqual(
            model.prepend([
                message("a", .incoming, cursor: 10), message("b", .incoming, cursor: 20),
                message("c", .incoming, cursor: 30)
            ]), 2, "c is already shown")
        XCTAssertEqual(model.entries.map(\.id), ["a", "b", "c", "d"])
        XCTAssertEqual(model.oldestCursor, 10)
        XCTAssertEqual(model.newestIncomingCursor, 30, "older history does not move the read mark back")
    }

    func testEntriesAreBounded() {
        var model = ChatModel()
        for i in 0..<(ChatModel.maxEntries + 10) { model.notice("n\(i)", at: i) }
        XCTAssertEqual(model.entries.count, ChatModel.maxEntries)
        XCTAssertEqual(model.entries.last?.body, "n\(ChatModel.maxEntries + 9)")
    }
}

/// The chat view's conversation features: /commands and updated messages.
final class ChatConversationTests: XCTestCase {
    private func message(_ id: String, _ direction: MessageDirection, _ body: String, cursor: Int) -> MessageInfo {
        MessageInfo(
            id: id, from: "f", fromName: "bob", to: "t", toName: "alice", direction: direction, sequence: cursor,
            createdAt: 0, body: body, state: direction == .incoming ? .received : .delivered, deliveredAt: nil,
            cursor: cursor)
    }

    func testSlashCommands() {
        XCTAssertEqual(ChatSlashCommand.parse("/reply sure thing"), .reply(nil, "sure thing"))
        XCTAssertEqual(ChatSlashCommand.parse("/edit  fixed "), .edit(nil, "fixed"))
        XCTAssertEqual(ChatSlashCommand.parse("/delete"), .delete(nil))
        XCTAssertEqual(ChatSlashCommand.parse("/attach ~/Pictures/cat one.png"), .attach("~/Pictures/cat one.png"))
        XCTAssertEqual(ChatSlashCommand.parse("/attach"), .unknown("attach"), "a path is needed")
        XCTAssertEqual(ChatSlashCommand.parse("/react 👍"), .react(nil, "👍"))
        XCTAssertEqual(ChatSlashCommand.parse("/reply"), .unknown("reply"), "a reply needs text")
        XCTAssertEqual(ChatSlashCommand.parse("/frobnicate"), .unknown("frobnicate"))
        XCTAssertNil(ChatSlashCommand.parse("hello /reply"))
        XCTAssertNil(ChatSlashCommand.parse("//reply is a command"))
        XCTAssertEqual(ChatSlashCommand.messageText("//reply is a command"), "/reply is a command")
        XCTAssertEqual(ChatSlashCommand.messageText("plain"), "plain")
    }

    func testUpdatesShowEditedDeletedAndReactionsAndTargetsSkipDeleted() {
        var model = ChatModel()
        model.add(message("a", .incoming, "question", cursor: 1))
        model.add(message("b", .outgoing, "answer", cursor: 2))
        model.add(message("c", .outgoing, "oops", cursor: 3))
        XCTAssertEqual(model.newestIncomingID, "a")
        XCTAssertEqual(model.newestOwnID, "c")
        var deleted = message("c", .outgoing, "", cursor: 3)
        deleted.deletedAt = 9
        model.update(deleted)
        XCTAssertEqual(model.entries.last?.body, "(deleted)")
        XCTAssertEqual(model.newestOwnID, "b", "a deleted message is not what /edit changes")
        var edited = message("b", .outgoing, "better answer", cursor: 2)
        edited.editedAt = 8
        edited.replyTo = MessageQuote(id: "a", fromName: "bob", excerpt: "question", deleted: false)
        edited.reactions = [MessageReaction(reaction: "👍", fromNames: ["bob"], mine: false)]
        model.update(edited)
        XCTAssertEqual(model.entries[1].body, "↳ bob: question\nbetter answer (edited)\n👍 1")
    }

    func testTheAttachmentLineShowsNameSizeAndState() {
        func t(_ direction: String, _ state: String, path: String? = nil, error: String? = nil) -> FileTransferInfo {
            FileTransferInfo(
                id: "0123456789abcdef0123456789abcdef", direction: direction, peer: "fp", peerName: "bob\u{1B}[2J",
                room: nil, name: "report.pdf", size: 3 << 20, mediaType: "application/pdf", caption: nil,
                state: state, bytesDone: 0, rate: nil, path: path, error: error, contentHash: "", createdAt: 0,
                updatedAt: 0)
        }
        XCTAssertEqual(
            ChatAttachment.line(t("in", "offered")),
            "bob\u{FFFD}[2J sends 📎 report.pdf (3.0 MiB): offered — parley get 01234567 to accept")
        XCTAssertEqual(
            ChatAttachment.line(t("out", "transferring")), "📎 report.pdf (3.0 MiB) to bob\u{FFFD}[2J: transferring")
        XCTAssertTrue(
            ChatAttachment.line(t("in", "completed", path: "/d/report.pdf")).hasSuffix("completed → /d/report.pdf"))
        XCTAssertTrue(ChatAttachment.line(t("out", "failed", error: "disk full")).hasSuffix("failed (disk full)"))
    }
}
