import XCTest

@testable import ParleyCore

/// Names are labels, and a label must look like what it is: nothing invisible, nothing that
/// reorders text, one encoding per name.
final class CardNameRulesTests: XCTestCase {
    func name(_ s: String) throws(CardError) -> String { try CardFieldRules.displayName(utf8: Array(s.utf8)) }

    func testInvisibleAndFormatCharactersAreRefused() {
        for (cp, what) in [
            (0x200B, "zero-width space"), (0x200C, "ZWNJ"), (0x200D, "ZWJ"), (0x2060, "word joiner"),
            (0xFEFF, "BOM"), (0x00AD, "soft hyphen"), (0x202E, "RLO"), (0x2067, "RLI"),
            (0x034F, "CGJ"), (0x3164, "Hangul filler"), (0xFE0F, "variation selector"),
            (0xE0041, "tag A")
        ] {
            let s = "bo" + String(Character(Unicode.Scalar(UInt32(cp))!)) + "b"
            XCTAssertThrowsError(try name(s), what) { error in
                XCTAssertEqual(error as? CardError, .displayNameForbiddenCharacter(codePoint: UInt32(cp)), what)
            }
        }
    }

    func testNamesMustBeNFCAndIssueNormalizes() throws {
        XCTAssertThrowsError(try name("Jose\u{301}")) { XCTAssertEqual($0 as? CardError, .displayNameNotNormalized) }
        XCTAssertEqual(try name("José"), "José")
        let key = IdentityKeyPair.generate()
        let card = try Card.issue(
            identity: key, noiseKey: NoiseStaticKeyPair.generate().publicKey,
            displayName: "Jose\u{301}", hostName: "", issuedAt: 1, sequence: 1)
        XCTAssertEqual(Array(card.displayName.utf8), Array("José".utf8), "signed in NFC")
        XCTAssertEqual(try Card.decode(card.encoded()).displayName, "José")
    }

    func testCombiningMarksAreBoundedButScriptsWork() throws {
        XCTAssertEqual(try name("Nguyễn Thị"), "Nguyễn Thị")
        XCTAssertEqual(try name("नमस्ते"), "नमस्ते")
        XCTAssertEqual(try name("李雷"), "李雷")
        XCTAssertThrowsError(try name("b" + String(repeating: "\u{0336}", count: 4))) {
            XCTAssertEqual($0 as? CardError, .displayNameTooManyCombiningMarks(limit: 3))
        }
    }
}
