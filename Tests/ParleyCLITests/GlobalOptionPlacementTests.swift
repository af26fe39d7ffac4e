import ArgumentParser
import XCTest

@testable import parley

final class GlobalOptionPlacementTests: XCTestCase {
    private func hoisted(_ arguments: [String]) -> [String] {
        GlobalOptionPlacement.hoisted(arguments, root: ParleyCommand.self)
    }

    func testOptionsBeforeTheSubcommandMoveAfterIt() {
        XCTAssertEqual(hoisted(["--socket", "/x.sock", "whoami"]), ["whoami", "--socket", "/x.sock"])
        XCTAssertEqual(hoisted(["--json", "peers"]), ["peers", "--json"])
        XCTAssertEqual(hoisted(["--socket=/x.sock", "--json", "status"]), ["status", "--socket=/x.sock", "--json"])
    }

    func testTheyGoAfterTheWholeSubcommandPathAndBeforeTheRest() {
        XCTAssertEqual(
            hoisted(["--json", "room", "accept", "#lab"]), ["room", "accept", "--json", "#lab"])
        XCTAssertEqual(
            hoisted(["--socket", "/s", "send", "bob", "--", "--not-an-option"]),
            ["send", "--socket", "/s", "bob", "--", "--not-an-option"])
    }

    func testEverythingElseIsLeftAlone() {
        XCTAssertEqual(hoisted(["whoami", "--json"]), ["whoami", "--json"])
        XCTAssertEqual(hoisted(["--version"]), ["--version"])
        XCTAssertEqual(hoisted(["--help", "send"]), ["--help", "send"])
        XCTAssertEqual(hoisted(["--json"]), ["--json"], "no subcommand: argument-parser says so")
        XCTAssertEqual(hoisted(["--json", "sned"]), ["--json", "sned"])
        XCTAssertEqual(hoisted(["--socket"]), ["--socket"], "a missing value is argument-parser's to report")
    }

    /// The moved arguments parse, with the same values as typed after the subcommand.
    func testHoistedArgumentsParse() throws {
        let command = try ParleyCommand.parseAsRoot(hoisted(["--socket", "/tmp/p.sock", "--json", "whoami"]))
        let whoami = try XCTUnwrap(command as? WhoamiCommand)
        XCTAssertEqual(whoami.options.socket, "/tmp/p.sock")
        XCTAssertTrue(whoami.options.json)
        let accept = try XCTUnwrap(
            try ParleyCommand.parseAsRoot(hoisted(["--socket", "/s", "room", "accept", "#lab"])) as? RoomAcceptCommand)
        XCTAssertEqual(accept.options.socket, "/s")
    }
}
