import Foundation
import ParleyControlProtocol
import XCTest

@testable import ParleyDaemon

/// `messages.list` with stored messages the daemon could not read (`unreadable`): the
/// cursors count them as part of the page, so a client pages past them, also when a page
/// held nothing else; the field is absent when there are none (older clients see nothing
/// new) and survives the trip through a response line.
final class MessagesListUnreadableTests: XCTestCase {
    private func message(_ cursor: Int) -> MessageInfo {
        MessageInfo(
            id: "0123abcd", from: "aaaa-bbbb", fromName: "alice", to: "abcd-efgh", toName: "bob", direction: .outgoing,
            sequence: 9, createdAt: 1_700_000_000_000, body: "hi", state: .queued, deliveredAt: nil, cursor: cursor)
    }

    func testTheCursorsGoPastUnreadableRows() throws {
        // Paging back: the page's oldest row (7) is the unreadable one.
        let back = MessagesListResult(
            messages: [message(8), message(9)], hasOlder: true, hasNewer: false, pagedForward: false,
            unreadable: [7])
        XCTAssertEqual(back.olderCursor, 7)
        XCTAssertEqual(back.nextCursor, 7)
        // Paging forward over a page of the unreadable row alone.
        let alone = MessagesListResult(
            messages: [], hasOlder: true, hasNewer: true, pagedForward: true, requestedAfter: 4, unreadable: [5])
        XCTAssertEqual(alone.nextCursor, 5)
        XCTAssertEqual(alone.olderCursor, 5)
    }

    func testTheFieldIsAbsentWithoutUnreadableRowsAndRoundTrips() throws {
        let plain = MessagesListResult(messages: [message(3)], hasOlder: false, hasNewer: false, pagedForward: false)
        let plainLine = String(decoding: try ControlJSON.line(plain), as: UTF8.self)
        XCTAssertFalse(plainLine.contains("unreadable"), plainLine)

        let damaged = MessagesListResult(
            messages: [message(3)], hasOlder: false, hasNewer: true, pagedForward: false, unreadable: [4, 6])
        let bytes = try ControlJSON.line(damaged)
        XCTAssertTrue(String(decoding: bytes, as: UTF8.self).contains("\"unreadable\":[4,6]"))
        XCTAssertEqual(try JSONDecoder().decode(MessagesListResult.self, from: Data(bytes)), damaged)
    }
}
