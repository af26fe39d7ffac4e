/// The validity rules for a card's human-readable fields, shared by `Card.issue` and
/// `Card.decode` so a node can never sign a card that peers would reject.
enum CardFieldRules {
    /// Most combining marks in a row (after NFC). Vietnamese stacks two, some Indic and
    /// Hebrew text three; more only serves to pile marks over neighbouring text.
    static let maxConsecutiveCombiningMarks = 3

    /// Code points a display name may not contain, because they make one name look like
    /// another or like no name at all: control characters (category Cc) could drive a
    /// terminal; line/paragraph separators could fake extra lines in a UI; bidirectional
    /// and other format characters (category Cf: zero-width space and joiners, bidi
    /// embeddings, overrides and isolates, soft hyphen, invisible operators, tags) are
    /// invisible or reorder text; and the remaining default-ignorable code points (variation
    /// selectors, Hangul fillers, the combining grapheme joiner) render as nothing.
    static func isForbiddenInDisplayName(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true  // C0, DEL, C1 (category Cc)
        case 0x2028, 0x2029: return true  // line / paragraph separator
        case 0x034F: return true  // combining grapheme joiner
        case 0x115F, 0x1160, 0x3164, 0xFFA0: return true  // Hangul fillers
        case 0x180B...0x180F: return true  // Mongolian free variation selectors, vowel separator
        case 0xFE00...0xFE0F, 0xE0100...0xE01EF: return true  // variation selectors
        case 0x2800: return true  // braille pattern blank
        default: break
        }
        return scalar.properties.generalCategory == .format  // Cf, incl. 200B-200F, 202A-202E, 2060-206F, FEFF
    }

    /// Normalization Form C of `name`: how `Card.issue` stores a name typed in any form.
    static func nfc(_ name: String) -> String { String(decoding: name._nfcCodeUnits, as: UTF8.self) }

    /// Checks a display name given as its UTF-8 bytes and returns it as a String.
    static func displayName(utf8 bytes: [UInt8]) throws(CardError) -> String {
        guard !bytes.isEmpty else { throw .emptyDisplayName }
        guard bytes.count <= Card.maxDisplayNameLength else { throw .displayNameTooLong(bytes: bytes.count) }
        // Swift's validating decoder rejects overlong forms, surrogates and values above
        // U+10FFFF, so the bytes round-trip exactly through `String.utf8`.
        guard let name = String(validating: bytes, as: UTF8.self) else { throw .displayNameNotUTF8 }
        var marks = 0
        for scalar in name.unicodeScalars {
            if isForbiddenInDisplayName(scalar) { throw .displayNameForbiddenCharacter(codePoint: scalar.value) }
            switch scalar.properties.generalCategory {
            case .nonspacingMark, .enclosingMark, .spacingMark:
                marks += 1
                if marks > maxConsecutiveCombiningMarks {
                    throw .displayNameTooManyCombiningMarks(limit: maxConsecutiveCombiningMarks)
                }
            default:
                marks = 0
            }
        }
        // Compared as bytes: String's == already treats canonically equivalent text as equal.
        guard Array(name.utf8) == Array(name._nfcCodeUnits) else { throw .displayNameNotNormalized }
        return name
    }

    /// Checks a host name given as bytes: empty (unknown), or dot-separated labels of
    /// 1...63 ASCII letters, digits and hyphens, not starting or ending with a hyphen
    /// (RFC 1123 "LDH" names), no empty labels and no trailing dot.
    static func hostName(bytes: [UInt8]) throws(CardError) -> String {
        guard bytes.count <= Card.maxHostNameLength else { throw .hostNameTooLong(bytes: bytes.count) }
        if bytes.isEmpty { return "" }
        for label in bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false) {
            guard !label.isEmpty else {
                throw .invalidHostName(reason: "empty label (leading, trailing or doubled '.')")
            }
            guard label.count <= Card.maxHostLabelLength else {
                throw .invalidHostName(reason: "label longer than \(Card.maxHostLabelLength) characters")
            }
            for c in label where !isLDH(c) {
                throw .invalidHostName(
                    reason: "byte 0x\(String(c, radix: 16)) is not an ASCII letter, digit, '-' or '.'")
            }
            guard label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-") else {
                throw .invalidHostName(reason: "a label starts or ends with '-'")
            }
        }
        // Safe: every byte was checked to be ASCII above.
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isLDH(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// `expiresAt`, if present, must be non-zero (0 encodes "none") and after `issuedAt`.
    static func checkExpiry(issuedAt: UInt64, expiresAt: UInt64?) throws(CardError) {
        // `e <= issuedAt` also catches 0, since issuedAt is unsigned.
        if let e = expiresAt, e <= issuedAt {
            throw .invalidExpiry(issuedAt: issuedAt, expiresAt: e)
        }
    }
}
