import ParleyCore
import XCTest

/// `Sodium.hex` / `Sodium.fromHex`: the store boundary's conversions of identities and
/// message ids (written into the storage directly since issue 32), checked against a
/// reference written the plain way.
final class HexTests: XCTestCase {
    private static func referenceHex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    func testEncodingMatchesTheReferenceAndDecodesBack() {
        var rng = SystemRandomNumberGenerator()
        for length in [0, 1, 15, 16, 32, 33, 64] {
            let bytes = (0..<length).map { _ in UInt8.random(in: .min ... .max, using: &rng) }
            let hex = Sodium.hex(bytes)
            XCTAssertEqual(hex, Self.referenceHex(bytes))
            XCTAssertEqual(Sodium.fromHex(hex), bytes)
            XCTAssertEqual(Sodium.fromHex(hex.uppercased()), bytes, "either case")
        }
        XCTAssertEqual(Sodium.hex(Array(0...255)), Self.referenceHex(Array(0...255)))
    }

    func testBadInputIsNil() {
        for bad in ["0", "abc", "0g", "g0", "zz", "0x00", " 00", "00 ", "é0", "0\u{0}"] {
            XCTAssertNil(Sodium.fromHex(bad), bad)
        }
        XCTAssertEqual(Sodium.fromHex(""), [])
        XCTAssertEqual(Sodium.fromHex("00ff7F"), [0x00, 0xff, 0x7f])
    }
}
