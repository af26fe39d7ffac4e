/// Characters that render as white space or as nothing at all: in a terminal, in a browser
/// (where CSS collapses runs of white space, and `nowrap` hides a trailing one), on any
/// font. Two names that differ only by these look the same on screen: "bob", "bob ",
/// " bob", "bob\u{3000}", "b\u{200B}ob", "bob\u{FE0F}" (issue 29, H1).
///
/// Used by the name skeleton (ParleyNodeCore `NameSkeleton`), which drops every one of
/// them wherever it is, and by the checks on a node's own name (`problem(inOwnName:)`).
/// A hostile peer can put any of them in its card; the skeleton is what makes that
/// harmless, so this class errs on the side of "blank": a false match only adds a mark.
public enum BlankCharacters {
    /// Code points that render blank but are in none of the Unicode classes below: the
    /// braille blank pattern (a real glyph, with no dots), the Hangul fillers (default
    /// ignorable, but many fonts draw them as a wide space), the Khitan filler, the
    /// musical null notehead, the object replacement and interlinear annotation characters.
    static let extraBlanks: Set<UInt32> = [
        0x2800, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x16FE4, 0x1D159, 0xFFF9, 0xFFFA, 0xFFFB
    ]

    /// Whether `scalar` renders as white space or as nothing:
    /// - every Unicode White_Space character (spaces of every width, tabs, line and
    ///   paragraph separators, NEL, the ideographic space, no-break spaces);
    /// - every default-ignorable code point (zero-width space, joiners, word joiner,
    ///   invisible operators, soft hyphen, bidi marks, embeddings, overrides and isolates,
    ///   variation selectors, tags, the combining grapheme joiner, fillers);
    /// - every format (Cf) and control (Cc) character, and unassigned code points (a
    ///   newer Unicode's character that this build's tables cannot know renders as a box
    ///   or nothing);
    /// - `extraBlanks`.
    public static func isBlank(_ scalar: Unicode.Scalar) -> Bool {
        let p = scalar.properties
        if p.isWhitespace || p.isDefaultIgnorableCodePoint { return true }
        switch p.generalCategory {
        case .format, .control, .spaceSeparator, .lineSeparator, .paragraphSeparator, .unassigned: return true
        default: break
        }
        return extraBlanks.contains(scalar.value)
    }

    /// Why a name this node would present to others is not acceptable, or nil: blank
    /// characters at either end, a run of them, or any blank other than the plain space
    /// (U+0020). People would see the same name as one without them, so a node never
    /// issues one (a peer's card may still carry them: the name skeleton marks it).
    public static func problem(inOwnName name: String) -> String? {
        let scalars = Array(name.unicodeScalars)
        if let first = scalars.first, isBlank(first) {
            return "must not begin with white space or an invisible character"
        }
        if let last = scalars.last, isBlank(last) {
            return "must not end with white space or an invisible character"
        }
        for (i, s) in scalars.enumerated() where isBlank(s) {
            if s != " " {
                return "must not contain U+\(hex(s)) (it shows as white space or nothing); use a plain space"
            }
            if i > 0, scalars[i - 1] == " " { return "must not contain two spaces in a row" }
        }
        return nil
    }

    private static func hex(_ s: Unicode.Scalar) -> String {
        let h = String(s.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - h.count)) + h
    }
}
