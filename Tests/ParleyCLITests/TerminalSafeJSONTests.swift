import Foundation
import ParleyControlProtocol
import XCTest

@testable import parley

/// The CLI's JSON output carries peers' free text (message bodies, captions): what a
/// terminal would act on is escaped, and the value a program reads is unchanged.
final class TerminalSafeJSONTests: XCTestCase {
    /// A body a hostile peer may send: C1 CSI and OSC (as UTF-8), DEL, a bidi override, a
    /// line separator; and ordinary non-ASCII text that must stay as it is.
    private let hostile = "a\u{9B}2J\u{9D}52;c;aGk=\u{9C}b\u{7F}c\u{202E}gnp.exe\u{2028}d é 🙂 \u{200F}"

    func testEveryTerminalActiveScalarIsEscapedAndTheValueIsTheSame() throws {
        let bytes = try ControlJSON.line(["body": hostile])
        let safe = TerminalSafeJSON.escaped(bytes)
        let text = String(decoding: safe, as: UTF8.self)
        for scalar in text.unicodeScalars {
            XCTAssertFalse(
                Terminal.isUnsafe(scalar, allowLayout: true) && scalar != "\n",
                "U+\(String(scalar.value, radix: 16)) left raw in \(text)")
        }
        XCTAssertTrue(text.contains("\\u009b2J") && text.contains("\\u202e") && text.contains("\\u007f"), text)
        XCTAssertTrue(text.contains("é 🙂"), "ordinary text stays as it is: \(text)")
        XCTAssertEqual(safe.last, UInt8(ascii: "\n"), "the line keeps its newline")
        let decoded = try JSONDecoder().decode([String: String].self, from: Data(safe))
        XCTAssertEqual(decoded["body"], hostile, "a program reads the same value")
    }

    func testPlainASCIIIsUnchanged() throws {
        let bytes = try ControlJSON.line(["body": "hello \"world\"\n\t\u{1B}[2J"])
        XCTAssertEqual(TerminalSafeJSON.escaped(bytes), bytes)
    }
}
