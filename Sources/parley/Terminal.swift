/// Makes text from peers safe to print on a terminal. Names and bodies come from other
/// machines: a raw ESC could rewrite the screen or fake a "delivered" mark, and bidi
/// overrides could make a name read as someone else's. Such characters are replaced by
/// U+FFFD so their presence stays visible.
enum Terminal {
    static let replacement: Character = "\u{FFFD}"

    /// For one-line fields (names, ids): newlines and tabs are replaced too.
    static func line(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { isUnsafe($0, allowLayout: false) ? "\u{FFFD}" : $0 }))
    }

    /// For message bodies: newlines and tabs are kept, other controls replaced.
    static func multiline(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { isUnsafe($0, allowLayout: true) ? "\u{FFFD}" : $0 }))
    }

    static func isUnsafe(_ scalar: Unicode.Scalar, allowLayout: Bool) -> Bool {
        switch scalar.value {
        case 0x0A, 0x09: return !allowLayout
        case 0x00...0x1F, 0x7F...0x9F: return true  // C0, DEL, C1 (includes CSI 0x9B)
        case 0x200E, 0x200F, 0x061C: return true  // directional marks
        case 0x202A...0x202E, 0x2066...0x2069: return true  // bidi embeddings, overrides, isolates
        case 0x2028, 0x2029: return true  // line/paragraph separators
        default: return false
        }
    }
}
