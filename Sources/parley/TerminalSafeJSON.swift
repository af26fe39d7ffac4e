/// Makes the CLI's JSON output (`--json`, `follow --json`, `export --format json`) safe to
/// land on a terminal. Message bodies and captions are free text from other machines, and
/// a JSON encoder escapes only the C0 controls: DEL, the C1 controls (U+009B is CSI and
/// U+009D is OSC to terminals that decode UTF-8 before parsing escapes, as VTE and xterm
/// do) and the bidi overrides would pass through raw and drive the terminal of a person
/// who runs `parley follow --json` in it, or pipes it through `jq`. Each scalar
/// `Terminal.isUnsafe` names is written as a `\uXXXX` escape instead: the same JSON value
/// for a program, nothing a terminal acts on. Pure.
enum TerminalSafeJSON {
    /// `json` (UTF-8 JSON text, compact, possibly ending in a newline) with every unsafe
    /// scalar above U+007E escaped. Only strings can hold such scalars (outside them valid
    /// JSON is ASCII), and the C0 controls are already escaped there by the encoder; the
    /// line's own newline is kept.
    static func escaped(_ json: [UInt8]) -> [UInt8] {
        // ASCII below DEL, the common case, needs nothing.
        guard json.contains(where: { $0 >= 0x7F }) else { return json }
        var out: [UInt8] = []
        out.reserveCapacity(json.count + 16)
        for scalar in String(decoding: json, as: UTF8.self).unicodeScalars {
            if scalar.value >= 0x7F && Terminal.isUnsafe(scalar, allowLayout: true) {
                out.append(contentsOf: Array(escape(scalar).utf8))
            } else {
                out.append(contentsOf: Array(String(scalar).utf8))
            }
        }
        return out
    }

    /// `\u009b`: every scalar `Terminal.isUnsafe` names is in the Basic Multilingual Plane,
    /// so one escape (no surrogate pair) writes it.
    static func escape(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
}
