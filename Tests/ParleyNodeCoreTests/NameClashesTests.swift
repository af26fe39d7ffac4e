import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class NameSkeletonTests: XCTestCase {
    func testLookAlikesShareASkeleton() {
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("b\u{043E}b"), "Cyrillic о")
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("Bob"), "case")
        XCTAssertEqual(NameSkeleton.of("alice"), NameSkeleton.of("aIice"), "capital I for l")
        XCTAssertEqual(NameSkeleton.of("modem"), NameSkeleton.of("rnodern"), "rn for m")
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("ｂｏｂ"), "fullwidth")
        XCTAssertEqual(NameSkeleton.of("bob"), NameSkeleton.of("b\u{200B}ob"), "an invisible character adds nothing")
        XCTAssertEqual(NameSkeleton.of("José"), NameSkeleton.of("Jose\u{301}"), "normalization forms")
    }

    /// Unicode's table maps a capital O to 0 and a capital I to 1 but not the small letters:
    /// "BOB" once had another skeleton than "bob", so a stranger named in capitals went
    /// unmarked beside the contact it imitates.
    func testCaseNeverMattersEvenWhereTheTableMapsOnlyTheCapital() {
        XCTAssertEqual(NameSkeleton.of("BOB"), NameSkeleton.of("bob"))
        XCTAssertEqual(NameSkeleton.of("Ivan"), NameSkeleton.of("ivan"))
        XCTAssertEqual(NameSkeleton.of("OLGA"), NameSkeleton.of("olga"))
        XCTAssertEqual(NameSkeleton.of("B0B"), NameSkeleton.of("bob"), "digit zero")
        // Every Latin capital, whose small letter Unicode gives no look-alike of its own:
        // a name of that capital looks like (is marked with) the same name in small letters.
        // (Where both have their own, e.g. Ð and ð, the two look different and stay apart.)
        for code in UInt32(0x41)...0x17F {
            guard let capital = Unicode.Scalar(code), capital.properties.isUppercase else { continue }
            let small = capital.properties.lowercaseMapping.unicodeScalars
            guard small.count == 1, let s = small.first, NameSkeleton.prototypeTable[s.value] == nil
                || NameSkeleton.prototypeTable[s.value] == NameSkeleton.prototypeTable[code]
            else { continue }
            XCTAssertEqual(
                NameSkeleton.of("x" + String(capital)), NameSkeleton.of("x" + String(s)),
                "U+\(String(code, radix: 16)) \(capital) against \(s)")
        }
    }

    /// Issue 29 (H1): every character that renders as white space or nothing, at either
    /// end, doubled, or inside, in any script: the name looks like "bob" on a terminal or
    /// in a browser (which collapses runs of white space and hides a trailing one).
    static let blanks: [(UInt32, String)] = [
        (0x20, "space"), (0x09, "tab"), (0x0A, "line feed"), (0x0D, "carriage return"), (0x0B, "vertical tab"),
        (0x0C, "form feed"), (0x85, "next line"), (0xA0, "no-break space"), (0x1680, "ogham space"),
        (0x2000, "en quad"), (0x2003, "em space"), (0x2007, "figure space"), (0x2009, "thin space"),
        (0x200A, "hair space"), (0x2028, "line separator"), (0x2029, "paragraph separator"),
        (0x202F, "narrow no-break space"), (0x205F, "medium mathematical space"), (0x3000, "ideographic space"),
        (0x200B, "zero-width space"), (0x200C, "ZWNJ"), (0x200D, "ZWJ"), (0x2060, "word joiner"),
        (0xFEFF, "BOM / ZWNBSP"), (0x00AD, "soft hyphen"), (0x034F, "combining grapheme joiner"),
        (0x061C, "Arabic letter mark"), (0x200E, "LRM"), (0x200F, "RLM"), (0x202A, "LRE"), (0x202E, "RLO"),
        (0x2066, "LRI"), (0x2069, "PDI"), (0x2062, "invisible times"), (0x180E, "Mongolian vowel separator"),
        (0xFE00, "VS1"), (0xFE0F, "VS16"), (0xE0100, "VS17"), (0x180B, "Mongolian FVS1"), (0xE0041, "tag A"),
        (0xE0001, "language tag"), (0x115F, "Hangul choseong filler"), (0x1160, "Hangul jungseong filler"),
        (0x3164, "Hangul filler"), (0xFFA0, "halfwidth Hangul filler"), (0x2800, "braille blank"),
        (0x17B4, "Khmer inherent vowel"), (0x1BCA0, "shorthand format letter overlap"),
        (0x1D173, "musical begin beam"), (0x00, "NUL"), (0x1B, "escape"), (0x7F, "DEL"), (0x9B, "CSI"),
        (0xFFF9, "interlinear annotation anchor"), (0x0378, "unassigned")
    ]

    func testEveryBlankCharacterAnywhereLooksLikeNothing() {
        let bob = NameSkeleton.of("bob")
        for (cp, what) in Self.blanks {
            let c = String(Character(Unicode.Scalar(cp)!))
            XCTAssertTrue(BlankCharacters.isBlank(Unicode.Scalar(cp)!), what)
            for variant in ["bob" + c, c + "bob", "bob" + c + c, "b" + c + "ob", c + c + "bob" + c, "bob " + c] {
                XCTAssertEqual(
                    NameSkeleton.of(variant), bob, "\(what) (U+\(String(cp, radix: 16))) in \(variant.debugDescription)"
                )
            }
        }
        // Width and script: fullwidth letters with an ideographic space; a doubled space
        // inside a two-word name in another script.
        XCTAssertEqual(NameSkeleton.of("ｂｏｂ\u{3000}"), bob)
        XCTAssertEqual(NameSkeleton.of("李\u{3000}\u{3000}雷"), NameSkeleton.of("李雷"))
        XCTAssertEqual(NameSkeleton.of("Анна  Петрова"), NameSkeleton.of("Анна Петрова"))
        // NFKD that yields a space (U+00A8 diaeresis is space + combining diaeresis).
        XCTAssertFalse(NameSkeleton.of("bob\u{00A8}").unicodeScalars.contains(where: BlankCharacters.isBlank))
    }

    func testVisibleCharactersAreNotBlank() {
        for c in ["b", "_", ".", "-", "ё", "李", "ँ", "\u{0301}", "😀", "\u{E000}"] {
            XCTAssertFalse(BlankCharacters.isBlank(c.unicodeScalars.first!), c)
        }
    }

    func testAnImpostorWithATrailingSpaceIsMarked() {
        let clashes = NameClashes.find([
            .init(identity: identity(2), selfAssertedName: "bob"),
            .init(identity: identity(3), selfAssertedName: "bob "),
            .init(identity: identity(4), selfAssertedName: "\u{2003}bob\u{200B}")
        ])
        XCTAssertEqual(clashes[identity(3)]?.with, [identity(2), identity(4)])
        XCTAssertEqual(clashes[identity(2)]?.with, [identity(3), identity(4)])
        XCTAssertEqual(clashes[identity(3)]?.kind, .confusable)
    }

    func testOwnNamesWithBlankEndsRunsOrInvisiblesAreRefused() {
        XCTAssertNil(BlankCharacters.problem(inOwnName: "Bob Smith"))
        XCTAssertNil(BlankCharacters.problem(inOwnName: "李雷"))
        for bad in ["bob ", " bob", "bob  smith", "bob\u{00A0}smith", "bob\u{200B}", "bo\u{3164}b", "bob\u{3000}"] {
            XCTAssertNotNil(BlankCharacters.problem(inOwnName: bad), bad.debugDescription)
        }
    }

    func testDifferentNamesStayDifferent() {
        XCTAssertNotEqual(NameSkeleton.of("bob"), NameSkeleton.of("rob"))
        XCTAssertNotEqual(NameSkeleton.of("alice"), NameSkeleton.of("alicia"))
        XCTAssertNotEqual(NameSkeleton.of("李雷"), NameSkeleton.of("韩梅梅"))
    }
}

final class NameClashesTests: XCTestCase {
    let bob = identity(2)
    let impostor = identity(3)
    let carol = identity(4)

    func testSameNameMarksBothPeers() {
        let clashes = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob"),
            .init(identity: impostor, selfAssertedName: "bob"),
            .init(identity: carol, selfAssertedName: "carol")
        ])
        XCTAssertEqual(clashes[bob], .init(kind: .sameName, with: [impostor]))
        XCTAssertEqual(clashes[impostor], .init(kind: .sameName, with: [bob]))
        XCTAssertNil(clashes[carol])
    }

    func testLookAlikeNamesAreMarkedConfusable() {
        let clashes = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob"),
            .init(identity: impostor, selfAssertedName: "b\u{043E}b")
        ])
        XCTAssertEqual(clashes[impostor]?.kind, .confusable)
        XCTAssertEqual(clashes[bob]?.with, [impostor])
    }

    func testANicknameWinsOverTheSelfAssertedName() {
        // The person named the real bob "Bob (lab)": what they see for him is unique, so he is
        // not marked; the impostor still claims a contact's name, so it stays marked.
        let clashes = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob", nickname: "Bob (lab)"),
            .init(identity: impostor, selfAssertedName: "bob")
        ])
        XCTAssertNil(clashes[bob])
        XCTAssertEqual(clashes[impostor], .init(kind: .sameName, with: [bob]))
        // A peer renaming itself to another's nickname is marked.
        let renamed = NameClashes.find([
            .init(identity: bob, selfAssertedName: "bob", nickname: "boss"),
            .init(identity: impostor, selfAssertedName: "boss")
        ])
        XCTAssertEqual(renamed[impostor]?.kind, .sameName)
    }

    func testAPeerCallingItselfByOurNameIsMarked() {
        let clashes = NameClashes.find([.init(identity: impostor, selfAssertedName: "alice")], myName: "alice")
        XCTAssertEqual(clashes[impostor], .init(kind: .sameName, with: []))
    }
}

/// Issue 29 (L1): `parley doctor` takes a dial-back answer only from a peer the person verified.
final class DialBackWitnessTests: XCTestCase {
    func testOnlyAVerifiedPeerThatUnderstandsTheProbeIsAsked() {
        typealias C = DialBackWitness.Candidate
        XCTAssertNil(DialBackWitness.choose([]))
        XCTAssertNil(
            DialBackWitness.choose([C(identity: identity(1), verified: false, understandsProbe: true)]),
            "a stranger (or a pinned peer) is never asked")
        XCTAssertNil(DialBackWitness.choose([C(identity: identity(2), verified: true, understandsProbe: false)]))
        XCTAssertEqual(
            DialBackWitness.choose([
                C(identity: identity(1), verified: false, understandsProbe: true),
                C(identity: identity(4), verified: true, understandsProbe: true),
                C(identity: identity(3), verified: true, understandsProbe: true)
            ]), identity(3))
    }
}
