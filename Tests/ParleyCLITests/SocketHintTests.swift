import XCTest

@testable import parley

/// What `parley` tells a person whose socket it may not use: never to join a group that
/// would not let them in and would open the owner's other files to them; joining a group
/// the daemon serves only with what it means.
final class SocketHintTests: XCTestCase {
    private func hint(_ directory: SocketDirectory?) -> String {
        ErrorHints.cannotConnect(
            path: "/run/x/control.sock", reason: "Permission denied",
            lookup: SocketLookup(given: true, candidates: [], directory: directory))
    }

    func testAPersonsOwnInstanceNeverSuggestsJoiningTheOwnersGroup() {
        // /run/parley-user/alice (0700, alice:users), seen by bob.
        let text = hint(SocketDirectory(ownerName: "alice", groupName: "users", groupMayEnter: false))
        XCTAssertFalse(text.contains("usermod"), text)
        XCTAssertTrue(text.contains("alice's own Parley"), text)
        XCTAssertTrue(text.contains("sudo systemctl enable --now parleyd@$USER"), text)
        // Inside a directory bob cannot even look at.
        let hidden = hint(nil)
        XCTAssertFalse(hidden.contains("usermod") || hidden.contains("group"), hidden)
        XCTAssertTrue(hidden.contains("parleyd@$USER"), hidden)
    }

    func testAGroupServedDaemonSaysWhatJoiningMeans() {
        // /run/parley (0750, parley:parley) of the system service.
        let text = hint(SocketDirectory(ownerName: "parley", groupName: "parley", groupMayEnter: true))
        XCTAssertTrue(text.contains("You are not in group parley: sudo usermod -aG parley $USER, then log in again"), text)
        XCTAssertTrue(text.contains("shares that one Parley identity and reads all of its messages"), text)
        XCTAssertTrue(text.contains("parleyd@$USER"), text)
    }
}
