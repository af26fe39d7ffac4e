import Foundation
import XCTest

/// Every `<!-- example:NAME -->` block of docs/PROTOCOL.md is compared with parleyd's own
/// encoding by some test here (issue 33 item 7): a block added to the document without a
/// check fails this test, and so does a check of a block that is gone.
final class ProtocolDocCoverageTests: XCTestCase {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()

    /// The names in the document, in order.
    func documentedExamples() throws -> [String] {
        let text = try String(contentsOf: ProtocolDoc.url, encoding: .utf8)
        let marker = try NSRegularExpression(pattern: "^<!-- example:([A-Za-z0-9-]+) -->$", options: .anchorsMatchLines)
        return marker.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
            String(text[Range($0.range(at: 1), in: text)!])  // group 1 always matches
        }
    }

    /// The names the tests of this directory pass to `ProtocolDoc.example`, `hexExample` or
    /// an `assertExample` helper.
    func checkedExamples() throws -> Set<String> {
        let call = try NSRegularExpression(pattern: #"[eE]xample\(\s*"([A-Za-z0-9-]+)""#)
        var names = Set<String>()
        let files = try FileManager.default.contentsOfDirectory(
            at: Self.testsDirectory, includingPropertiesForKeys: nil)
        for file in files where file.pathExtension == "swift" && file.lastPathComponent != "ProtocolDoc.swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for m in call.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                names.insert(String(text[Range(m.range(at: 1), in: text)!]))  // group 1 always matches
            }
        }
        return names
    }

    func testEveryExampleBlockIsCheckedAgainstTheCode() throws {
        let documented = try documentedExamples()
        XCTAssertEqual(documented.count, Set(documented).count, "an example name appears twice")
        XCTAssertGreaterThanOrEqual(documented.count, 40)
        let checked = try checkedExamples()
        XCTAssertEqual(
            Set(documented).subtracting(checked).sorted(), [], "example blocks no test compares with the code")
        XCTAssertEqual(checked.subtracting(documented).sorted(), [], "tests name example blocks the document lacks")
    }
}
