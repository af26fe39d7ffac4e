import XCTest

@testable import parley

/// What stays on `parley`'s command line, which every local user can read: the socket, and
/// nothing a person typed as text or a peer's name.
final class CommandLineScrubTests: XCTestCase {
    func testOnlyTheSocketStays() {
        XCTAssertEqual(
            CommandLineScrub.kept(["send", "bob", "the door code", "--wait", "--socket", "/run/parley/control.sock"]),
            [false, false, false, false, true, true])
        XCTAssertEqual(CommandLineScrub.kept(["--socket=/s", "presence", "at the dentist"]), [true, false, false])
        XCTAssertEqual(CommandLineScrub.kept(["send", "bob", "--socket"]), [false, false, true])
    }

    func testAfterADoubleDashEverythingIsText() {
        XCTAssertEqual(
            CommandLineScrub.kept(["send", "bob", "--", "--socket", "my secret"]), [false, false, false, false, false])
    }
}
