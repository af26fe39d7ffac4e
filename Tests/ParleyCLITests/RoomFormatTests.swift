import ParleyControlProtocol
import XCTest

@testable import parley

/// How `parley rooms` and `parley follow` show roles, invitations and retired rooms.
final class RoomFormatTests: XCTestCase {
    func room(status: String, role: String? = "member") -> RoomInfo {
        RoomInfo(
            id: String(repeating: "ab", count: 16), name: "lab",
            members: [
                RoomMemberInfo(name: "alice", fingerprint: "aaaa", you: false, role: "owner", joined: true),
                RoomMemberInfo(name: "bob", fingerprint: "bbbb", you: true, role: "admin", joined: true),
                RoomMemberInfo(name: "car\u{1B}ol", fingerprint: "cccc", you: false, role: "member", joined: false)
            ],
            member: status == "joined", creator: "aaaa", creatorName: "alice", createdAt: 1, version: 4, queued: 0,
            status: status, role: role, invitedBy: status == "invited" ? "aaaa-bbbb-cccc" : nil,
            invitedByName: status == "invited" ? "alice" : nil)
    }

    /// A room message written after its author's removal is shown (nothing is withdrawn)
    /// under a line that says so; the line goes when the daemon's mark goes.
    func testAMessageWrittenAfterItsAuthorsRemovalSaysSo() {
        var m = MessageInfo(
            id: "0f1321a6cff40c4ad331198e0f139081", from: "eeee", fromName: "e\u{1B}ve", to: "nnnn", toName: "n",
            direction: .incoming, sequence: 3, createdAt: 0, body: "still here", state: .received, deliveredAt: nil,
            cursor: 1, room: MessageRoom(id: String(repeating: "ab", count: 16), name: "lab", afterRemoval: true))
        XCTAssertEqual(
            HumanFormat.conversationBody(m),
            "⚠ sent after e\u{FFFD}ve was removed: not part of the room's history\nstill here")
        m.room?.afterRemoval = false
        XCTAssertEqual(HumanFormat.conversationBody(m), "still here")
    }

    func testMembersShowRolesInvitationsAndAreSanitised() {
        XCTAssertEqual(
            HumanFormat.roomMembers(room(status: "joined")),
            "alice (owner), bob (you, admin), car\u{FFFD}ol (invited)")
    }

    /// A name nobody verified is only a label: its fingerprint prefix is shown beside it.
    func testAnUnverifiedMemberShowsItsFingerprintPrefix() {
        var r = room(status: "joined")
        r.members[0].verified = true
        r.members[2].verified = false
        r.members[2].fingerprint = "pkhh-45sk-ab12"
        XCTAssertEqual(
            HumanFormat.roomMembers(r), "alice (owner), bob (you, admin), car\u{FFFD}ol (pkhh-45sk, invited)")
    }

    func testStatusAndMembersColumns() {
        XCTAssertEqual(HumanFormat.roomStatus(room(status: "joined", role: "admin")), "admin")
        XCTAssertEqual(HumanFormat.roomStatus(room(status: "invited")), "invited")
        XCTAssertEqual(HumanFormat.roomStatus(room(status: "left", role: nil)), "left")
        XCTAssertEqual(HumanFormat.roomStatus(room(status: "retired", role: nil)), "retired")
        XCTAssertTrue(HumanFormat.roomMembersColumn(room(status: "invited")).contains("`parley room accept '#lab'`"))
        XCTAssertTrue(HumanFormat.roomMembersColumn(room(status: "retired", role: nil)).contains("create it again"))
    }

    func testFollowLines() {
        XCTAssertEqual(
            HumanFormat.roomUpdated(room(status: "invited"), at: "T").first?.hasPrefix("[T] #lab: you are invited"),
            true)
        XCTAssertEqual(
            HumanFormat.roomUpdated(room(status: "left", role: nil), at: "T"), ["[T] #lab: you are no longer a member"])
        XCTAssertEqual(
            HumanFormat.roomUpdated(room(status: "joined"), at: "T").first?.hasPrefix(
                "[T] #lab members: alice (owner)"), true)
    }

    /// An invitation names who sent it (name and fingerprint prefix), and the suggested
    /// command survives a shell: bash reads an unquoted `#lab` as a comment.
    func testInvitationNamesTheInviterAndQuotesTheCommand() {
        XCTAssertEqual(
            HumanFormat.roomMembersColumn(room(status: "invited")),
            "invited by alice (aaaa-bbbb): `parley room accept '#lab'` or decline")
        XCTAssertTrue(
            HumanFormat.roomUpdated(room(status: "invited"), at: "T")[0].contains(
                "invited by alice (aaaa-bbbb) (alice (owner)"))
        var unnamed = room(status: "invited")
        unnamed.invitedByName = nil
        XCTAssertTrue(HumanFormat.roomMembersColumn(unnamed).hasPrefix("invited by aaaa-bbbb:"))
    }

    func testShellQuoting() {
        XCTAssertEqual(ShellQuoting.word("bob"), "bob")
        XCTAssertEqual(ShellQuoting.word("pkhh-45sk"), "pkhh-45sk")
        XCTAssertEqual(ShellQuoting.room("lab"), "'#lab'")
        XCTAssertEqual(ShellQuoting.word("Bob Smith"), "'Bob Smith'")
        XCTAssertEqual(ShellQuoting.word("it's $HOME"), "'it'\\''s $HOME'")
        XCTAssertEqual(ShellQuoting.word(""), "''")
        XCTAssertEqual(ShellQuoting.word("*"), "'*'")
    }
}
