import ParleyControlProtocol
import ParleyCore
import XCTest

@testable import ParleyDaemon

/// The conversation methods' params, limits and routes (docs/CONTROL.md, "Conversation").
final class ConversationControlTests: XCTestCase {
    func testControlLimitsAreTheWireLimits() {
        XCTAssertEqual(ControlLimits.maxReactionBytes, WireLimits.maxReactionBytes)
        XCTAssertEqual(ControlLimits.maxStatusBytes, WireLimits.maxStatusBytes)
    }

    func testParamsAreCheckedBeforeTheNode() {
        let id = String(repeating: "ab", count: 16)
        XCTAssertNoThrow(try MessagesReplyParams(message: id, body: "x").validate())
        XCTAssertNoThrow(try MessagesEditParams(message: String(id.prefix(8)), body: "x").validate())
        XCTAssertThrowsError(try MessagesEditParams(message: "abcdef1", body: "x").validate(), "7 digits")
        XCTAssertThrowsError(try MessagesEditParams(message: id + "a", body: "x").validate(), "33 digits")
        XCTAssertThrowsError(try MessagesDeleteParams(message: "not-hex!").validate())
        XCTAssertThrowsError(try MessagesReplyParams(message: id, body: "").validate())
        XCTAssertThrowsError(try MessagesEditParams(message: id, body: "").validate())
        XCTAssertNoThrow(try MessagesReactParams(message: id, reaction: "👍").validate())
        XCTAssertThrowsError(try MessagesReactParams(message: id, reaction: "").validate())
        XCTAssertThrowsError(
            try MessagesReactParams(message: id, reaction: String(repeating: "a", count: 49)).validate())
        XCTAssertNoThrow(try NodeSetStatusParams(status: "").validate())
        XCTAssertThrowsError(try NodeSetStatusParams(status: String(repeating: "a", count: 141)).validate())
    }

    func testEveryConversationMethodIsRouted() {
        for method in [
            ControlMethod.messagesReply, ControlMethod.messagesEdit, ControlMethod.messagesDelete,
            ControlMethod.messagesReact, ControlMethod.nodeSetStatus
        ] {
            XCTAssertNotNil(ControlCall.routes[method], method)
            XCTAssertTrue(ControlMethod.all.contains(method), method)
        }
        XCTAssertTrue(ControlEvent.all.contains(ControlEvent.messageUpdated))
        XCTAssertTrue(ControlEvent.all.contains(ControlEvent.peerStatus))
    }
}
