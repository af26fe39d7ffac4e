import Foundation
import ParleyCore
import XCTest

@testable import ParleyDaemon

/// docs/PROTOCOL.md "Optional network key": the file format and its permission error.
final class NetworkKeyFileTests: XCTestCase {
    private let hex = String(repeating: "5a", count: 32)

    private func parse(_ text: String) throws -> [UInt8] {
        var bytes = Array(text.utf8)
        return try NetworkKeyFile.parse(&bytes).copyBytes()
    }

    func testAcceptsDigitsWithLFCRLFSpacesAndEitherCase() throws {
        let key = [UInt8](repeating: 0x5a, count: 32)
        XCTAssertEqual(try parse(hex), key)
        XCTAssertEqual(try parse(hex + "\n"), key)
        XCTAssertEqual(try parse(hex + "\r\n"), key)
        XCTAssertEqual(try parse(hex.uppercased() + "\n"), key)
        XCTAssertEqual(try parse(String(hex.prefix(32)) + "\n" + String(hex.suffix(32)) + "\n"), key)
        XCTAssertEqual(try parse("  " + hex + " \n"), key)
    }

    func testRefusesCommentsTabsAndWrongLengths() {
        for bad in [
            "# office key\n" + hex + "\n", hex + "\t\n", "\t" + hex, String(hex.dropLast(2)) + "\n",
            hex + "00\n", "\u{FEFF}" + hex, String(hex.dropLast()) + "g", ""
        ] {
            XCTAssertThrowsError(try parse(bad), "accepted \(bad.debugDescription)") { error in
                XCTAssertEqual(error as? NetworkKeyFile.Error, .malformed)
            }
        }
    }

    func testLoosePermissionsUseTheKeyFilesWording() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("nk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("office.key").path
        XCTAssertTrue(
            FileManager.default.createFile(
                atPath: path, contents: Data((hex + "\n").utf8),
                attributes: [.posixPermissions: 0o644]))
        XCTAssertThrowsError(try NetworkKeyFile.load(path: path)) { error in
            XCTAssertEqual(
                "\(error)",
                "permissions 0644 for '\(path)' are too open; the network key must not be accessible by others. Run: chmod 600 '\(path)'"
            )
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        XCTAssertEqual(try NetworkKeyFile.load(path: path).copyBytes(), [UInt8](repeating: 0x5a, count: 32))
    }
}
