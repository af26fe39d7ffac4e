import ParleyNodeCore
import XCTest

final class DownloadDirectoryCheckTests: XCTestCase {
    private func problem(dir: Bool = true, link: Bool = false, owner: UInt32 = 500, mode: UInt32 = 0o700) -> String? {
        DownloadDirectoryCheck.problem(
            path: "/d", facts: .init(isDirectory: dir, isSymbolicLink: link, ownerUID: owner, mode: mode),
            daemonUID: 500, daemonUser: "parley")
    }

    func testTheDaemonsOwnPrivateDirectoryIsFine() {
        XCTAssertNil(problem())
        XCTAssertNil(problem(mode: 0o755), "readable by others is the owner's choice; writable is not")
    }

    func testADirectoryOthersMayWriteIsRefusedWithTheFix() {
        let group = problem(mode: 0o770)
        XCTAssertNotNil(group)
        XCTAssertTrue(group?.contains("chmod go-w /d") == true, group ?? "")
        XCTAssertNotNil(problem(mode: 0o777))
        XCTAssertNotNil(problem(mode: 0o1777), "even sticky /tmp-like directories")
    }

    func testSomeoneElsesDirectoryALinkOrAFileIsRefused() {
        let other = problem(owner: 1000)
        XCTAssertTrue(other?.contains("sudo chown parley /d") == true, other ?? "")
        XCTAssertNotNil(problem(link: true))
        XCTAssertNotNil(problem(dir: false))
    }
}
