/// How many terminal columns text takes. An approximation of wcwidth(3) that needs no
/// locale: combining marks and format characters take none, East Asian wide and
/// fullwidth characters and emoji take two, everything else one.
enum DisplayWidth {
    /// Code point ranges terminals draw two columns wide (East Asian Width W and F).
    static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
        0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
        0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD
    ]

    static func of(_ scalar: Unicode.Scalar) -> Int {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        if scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value) { return 0 }
        if scalar.properties.isEmojiPresentation { return 2 }
        return wideRanges.contains { $0.contains(scalar.value) } ? 2 : 1
    }

    /// A grapheme cluster: the width of its first scalar, or 2 when it asks for emoji
    /// presentation (U+FE0F) or joins emoji (U+200D).
    static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if scalars.count > 1, scalars.contains(where: { $0.value == 0xFE0F || $0.value == 0x200D }) { return 2 }
        return of(first)
    }

    static func of(_ text: String) -> Int { text.reduce(0) { $0 + of($1) } }

    /// The longest prefix of `text` that fits in `columns`.
    static func prefix(_ text: String, fitting columns: Int) -> String {
        var used = 0
        var out = ""
        for c in text {
            let w = of(c)
            if used + w > columns { break }
            used += w
            out.append(c)
        }
        return out
    }
}
