import Foundation
import ParleyControlProtocol
import XCTest

@testable import parley

/// What new users stumbled on in the CLI (issue 31): the pure parts.
final class CLIFirstUseTests: XCTestCase {
    private func message(room: MessageRoom? = nil, cursor: Int = 14, direction: MessageDirection = .outgoing)
        -> MessageInfo
    {
        MessageInfo(
            id: "0123456789abcdef", from: "aaaa-bbbb-cccc-dddd", fromName: "me", to: "pkhh-45sk-zzzz-yyyy",
            toName: room.map { "#" + $0.name } ?? "bob", direction: direction, sequence: 1, createdAt: 0, body: "hi",
            state: .queued, deliveredAt: nil, cursor: cursor, room: room)
    }

    private let lab = MessageRoom(id: String(repeating: "ab", count: 16), name: "lab")

    // MARK: room sends say what the daemon reports

    func testRoomSendWithEveryMemberOnlineIsSentNotQueued() {
        let all = SendCommand.outcome(
            MessagesSendResult(message: message(room: lab), roomRecipients: 2, roomRecipientsOnline: 2))
        XCTAssertTrue(all.hasPrefix("→ sent to every member of #lab (2 members, all online)"), all)
        XCTAssertFalse(all.contains("queued"))
        let some = SendCommand.outcome(
            MessagesSendResult(message: message(room: lab), roomRecipients: 3, roomRecipientsOnline: 1))
        XCTAssertTrue(some.hasPrefix("→ sent to the 1 of 3 members of #lab online now"), some)
        let none = SendCommand.outcome(
            MessagesSendResult(message: message(room: lab), roomRecipients: 3, roomRecipientsOnline: 0))
        XCTAssertTrue(none.hasPrefix("… queued for #lab: no member is online"), none)
        let older = SendCommand.outcome(MessagesSendResult(message: message(room: lab)))
        XCTAssertTrue(older.hasPrefix("… queued for #lab"), "an older daemon that does not say: as before")
    }

    func testDirectSendOutcome() {
        XCTAssertTrue(
            SendCommand.outcome(MessagesSendResult(message: message(), peerOnline: true)).hasPrefix("→ sent to bob"))
        XCTAssertTrue(
            SendCommand.outcome(MessagesSendResult(message: message(), peerOnline: false)).hasPrefix(
                "… queued because bob is offline"))
    }

    // MARK: attachments are checked before anything is sent

    func testAttachmentProblemsNameTheFileAndSuggestTheCloseName() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parley-attach-\(getpid())")
        try? FileManager.default.removeItem(at: dir)
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let report = dir.appendingPathComponent("report.pdf").path
        try Data("pdf".utf8).write(to: URL(fileURLWithPath: report))
        XCTAssertEqual(AttachmentCheck.problems([report]), [])
        let typo = dir.appendingPathComponent("reprot.pdf").path
        let problems = AttachmentCheck.problems([report, typo, dir.path])
        XCTAssertEqual(problems.count, 2)
        XCTAssertTrue(problems[0].contains("reprot.pdf: No such file or directory"), problems[0])
        XCTAssertTrue(problems[0].hasSuffix("(did you mean report.pdf?)"), problems[0])
        XCTAssertTrue(problems[1].contains("is a directory"), problems[1])
        if getuid() != 0 {
            chmod(report, 0)
            XCTAssertTrue(AttachmentCheck.problem(report)?.contains("cannot be opened") ?? false)
        }
    }

    // MARK: peers show the presence line

    func testPeersTableShowsPresenceOfOnlinePeers() {
        let busy = PeerInfo(
            name: "bob", host: "h", fingerprint: "bbbb-bbbb", identityKey: "00", online: true, addresses: [],
            trust: .pinned, safetyNumber: "1", lastSeen: nil, queued: 0, status: "in a meeting")
        let gone = PeerInfo(
            name: "carol", host: "h", fingerprint: "cccc-cccc", identityKey: "01", online: false, addresses: [],
            trust: .pinned, safetyNumber: "1", lastSeen: nil, queued: 0, status: "stale line")
        let rows = PeersCommand.rows([busy, gone])
        XCTAssertEqual(rows[0].last, "PRESENCE")
        XCTAssertEqual(rows[1].last, "in a meeting")
        XCTAssertEqual(rows[2].last, "", "an offline peer's old line is not shown as current")
        XCTAssertEqual(PeersCommand.rows([gone])[0].last, "UNREAD", "no empty column when nobody has a line")
    }

    // MARK: search says what to do with a hit

    func testSearchHitGivesTheExactCommandToSeeItInContext() {
        XCTAssertEqual(
            SearchCommand.contextCommand(message(room: lab, cursor: 14)),
            "parley read '#lab' --before 15 --limit 10 --keep-unread")
        XCTAssertEqual(
            SearchCommand.contextCommand(message(cursor: 3)),
            "parley read pkhh-45sk --before 4 --limit 10 --keep-unread")
        XCTAssertEqual(
            SearchCommand.contextCommand(message(cursor: 3, direction: .incoming)),
            "parley read aaaa-bbbb --before 4 --limit 10 --keep-unread")
    }

    // MARK: get --to keeps the offered name

    func testGetToUsesTheOfferedNameNotTheDownloadDirectorysCopyName() {
        XCTAssertEqual(FileMove.targetName(offered: "big50.bin", saved: "/d/big50 (1).bin"), "big50.bin")
        XCTAssertEqual(FileMove.targetName(offered: "..", saved: "/d/x (1).bin"), "x (1).bin")
        XCTAssertEqual(FileMove.targetName(offered: "a/b", saved: "/d/b"), "b")
    }

    /// `parley get --to DIR` writes the bytes of the descriptor `files.open` handed over
    /// under the offered name, never replacing a file; `--to FILE` that exists is refused.
    func testGetToWritesUnderTheOfferedNameNeverReplacing() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parley-get-\(getpid())")
        try? FileManager.default.removeItem(at: root)
        let target = root.appendingPathComponent("empty")
        try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let source = root.appendingPathComponent("big50 (1).bin").path
        try Data("xyz".utf8).write(to: URL(fileURLWithPath: source))
        let fd = open(source, O_RDONLY)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let name = FileMove.targetName(offered: "big50.bin", saved: source)
        let first = try ReceivedFileWriter.write(from: fd, size: 3, name: name, to: target.path)
        XCTAssertEqual(first, target.appendingPathComponent("big50.bin").path)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: first)), Data("xyz".utf8))
        let second = try ReceivedFileWriter.write(from: fd, size: 3, name: name, to: target.path)
        XCTAssertEqual(second, target.appendingPathComponent("big50 (1).bin").path)
        XCTAssertThrowsError(try ReceivedFileWriter.write(from: fd, size: 3, name: name, to: first))
    }

    // MARK: completion words

    func testCompletionOffersPlainUniqueNamesElseFingerprints() {
        func peer(_ name: String, _ fp: String) -> PeerInfo {
            PeerInfo(
                name: name, host: "h", fingerprint: fp, identityKey: fp, online: true, addresses: [], trust: .pinned,
                safetyNumber: "1", lastSeen: nil, queued: 0)
        }
        let room = RoomInfo(
            id: "ab", name: "lab", members: [], member: true, creator: "c", creatorName: "c", createdAt: 0,
            version: 1, queued: 0)
        let words = PeerCompletion.words(
            peers: [
                peer("bob", "bbbb-1111-2222"), peer("alice", "aaaa-1111-2222"), peer("alice", "aaaa-3333-4444"),
                peer("Bob Smith", "cccc-1111-2222")
            ],
            rooms: [room])
        XCTAssertEqual(words, ["bob", "aaaa-1111", "aaaa-3333", "cccc-1111", "#lab"])
    }

    /// A peer's chosen name that a shell passes as an option (`--socket=...`, `-h`) is never
    /// offered as a word to complete: quoting cannot stop it being an option.
    func testCompletionNeverOffersANameThatWouldBeAnOption() {
        func peer(_ name: String, _ fp: String) -> PeerInfo {
            PeerInfo(
                name: name, host: "h", fingerprint: fp, identityKey: fp, online: true, addresses: [], trust: .pinned,
                safetyNumber: "1", lastSeen: nil, queued: 0)
        }
        let words = PeerCompletion.words(
            peers: [
                peer("--socket=/tmp/m.sock", "dddd-1111-2222"), peer("-h", "eeee-1111-2222"),
                peer("bob-2", "ffff-1111-2222")
            ],
            rooms: [])
        XCTAssertEqual(words, ["dddd-1111", "eeee-1111", "bob-2"])
    }

    // MARK: read shows attachments

    func testReadShowsTheConversationsAttachmentsAmongItsMessages() {
        func t(_ id: String, peer: String, room: String? = nil, at time: Int) -> FileTransferInfo {
            FileTransferInfo(
                id: id, direction: "in", peer: peer, peerName: "bob", room: room, name: "\(id).pdf", size: 10,
                mediaType: "application/pdf", caption: nil, state: "completed", bytesDone: 10, rate: nil,
                path: "/d/\(id).pdf", error: nil, contentHash: "", createdAt: time, updatedAt: time)
        }
        var first = message(cursor: 1, direction: .incoming)
        first.createdAt = 100
        first.body = "the report follows"
        var second = message(cursor: 2, direction: .incoming)
        second.createdAt = 300
        second.body = "got it?"
        let page = MessagesListResult(messages: [first, second], nextCursor: nil)
        let lines = TranscriptAttachments.lines(
            page: page,
            transfers: [
                t("mine", peer: "aaaa-bbbb-cccc-dddd", at: 200), t("other", peer: "zzzz", at: 200),
                t("room", peer: "aaaa-bbbb-cccc-dddd", room: "ab", at: 200)
            ],
            scope: .peer(fingerprint: "aaaa-bbbb-cccc-dddd"), showID: false)
        XCTAssertEqual(lines.count, 3, lines.joined(separator: "\n"))
        XCTAssertTrue(lines[0].hasSuffix("the report follows"))
        XCTAssertTrue(lines[1].contains("📎 mine.pdf") && lines[1].contains("completed → /d/mine.pdf"), lines[1])
        XCTAssertTrue(lines[2].hasSuffix("got it?"))
        let older = MessagesListResult(messages: [second], nextCursor: nil, olderCursor: 2)
        XCTAssertEqual(
            TranscriptAttachments.lines(
                page: older, transfers: [t("mine", peer: "aaaa-bbbb-cccc-dddd", at: 200)],
                scope: .peer(fingerprint: "aaaa-bbbb-cccc-dddd"), showID: false
            ).count, 1, "a transfer from before the page belongs to the older page")
    }
}
