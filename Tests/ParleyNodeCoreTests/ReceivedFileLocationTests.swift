import ParleyNodeCore
import XCTest

final class ReceivedFileLocationTests: XCTestCase {
    func testAFileInTheCurrentDownloadDirectoryIsOnlyLookedForWhereItWasSaved() {
        XCTAssertEqual(
            ReceivedFileLocation.candidates(
                recorded: "/var/lib/parley/files/a (1).png", downloadDirectory: "/var/lib/parley/files/"),
            ["/var/lib/parley/files/a (1).png"])
    }

    func testAMovedStateDirectoryFindsTheFileUnderItsNameInTheNewDirectoryAfterTheRecordedPath() {
        XCTAssertEqual(
            ReceivedFileLocation.candidates(
                recorded: "/var/lib/parley/files/minutes (2).txt", downloadDirectory: "/var/lib/parley-user/alice/files"
            ),
            ["/var/lib/parley/files/minutes (2).txt", "/var/lib/parley-user/alice/files/minutes (2).txt"])
    }

    func testNothingButTheRecordedPathWhenItHasNoFileName() {
        for recorded in ["/var/lib/parley/files/", "/var/lib/parley/files/..", "minutes.txt"] {
            XCTAssertEqual(
                ReceivedFileLocation.candidates(recorded: recorded, downloadDirectory: "/srv/files"), [recorded],
                recorded)
        }
    }
}
