/// Renders untrusted text (peer names, config values, socket paths) so it stays on one
/// line and cannot forge log lines or terminal escapes: control characters, line and
/// paragraph separators and backslashes become visible escapes, and overlong text is cut.
public enum TextEscaping {
    /// Marker appended when text is cut to its limit.
    public static let truncationMarker = "…"

    /// `text` with `\` `\n` `\r` `\t` and other control characters escaped; `"` too when
    /// `escapeQuotes` (for quoted values). At most `maxScalars` Unicode scalars are kept.
    public static func escaped(_ text: String, escapeQuotes: Bool, maxScalars: Int) -> String {
        var out = ""
        out.reserveCapacity(min(text.utf8.count, maxScalars) + 8)
        var kept = 0
        for scalar in text.unicodeScalars {
            if kept == maxScalars {
                out += truncationMarker
                break
            }
            kept += 1
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\"" where escapeQuotes: out += "\\\""
            default:
                if isInvisibleControl(scalar) {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }

    /// `text` in double quotes, escaped, for error messages: "got \"yes\"".
    public static func quoted(_ text: String, maxScalars: Int = 80) -> String {
        "\"" + escaped(text, escapeQuotes: true, maxScalars: maxScalars) + "\""
    }

    /// C0/C1 controls, DEL, and the Unicode line/paragraph separators: anything that
    /// could break a line or drive a terminal.
    public static func isInvisibleControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029: true
        default: false
        }
    }
}
