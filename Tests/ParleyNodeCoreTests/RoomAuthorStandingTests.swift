import ParleyCore
import ParleyNodeCore
import XCTest

/// Which authors' signed room traffic a member may hand over: a block holds on the relay
/// path (a blocked key has no session of its own); nothing else refuses.
final class RoomAuthorStandingTests: XCTestCase {
    func testOnlyABlockedAuthorIsRefused() {
        XCTAssertEqual(RoomAuthorStanding.verdict(author: .blocked), .refuseBlocked)
        XCTAssertEqual(RoomAuthorStanding.verdict(author: .replaced), .take, "a replaced key's room history stays")
        XCTAssertEqual(RoomAuthorStanding.verdict(author: .awaitingApproval), .take, "the room made it a co-member")
        XCTAssertEqual(RoomAuthorStanding.verdict(author: .trusted), .take)
        XCTAssertEqual(RoomAuthorStanding.verdict(author: nil), .take, "a co-member never met")
    }
}
