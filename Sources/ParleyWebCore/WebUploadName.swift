/// The name an uploaded file is staged (and so offered) under, from the name the browser
/// sent, which a script in the page controls. The staged file is created inside a fresh
/// directory of its own, so the name decides nothing but the last path component: it must
/// be one (no `/`, no `..`), printable, and not a hidden file.
public enum WebUploadName {
    /// What a name with nothing left after sanitizing becomes.
    public static let fallback = "upload"

    public static func sanitize(_ raw: String) -> String {
        // Only the last component of whatever path the browser (or a script) gave.
        let last = raw.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last.map(String.init) ?? ""
        var scalars = String.UnicodeScalarView()
        for scalar in last.unicodeScalars where !isRemoved(scalar) { scalars.append(scalar) }
        var name = String(scalars)
        // No hidden file, no `.` or `..`, nothing a shell or a file manager trims.
        while let first = name.first, first == "." || first == " " || first == "-" { name.removeFirst() }
        while let last = name.last, last == "." || last == " " { name.removeLast() }
        name = truncated(name, toBytes: WebLimits.maxUploadNameBytes)
        return name.isEmpty ? fallback : name
    }

    /// Control characters (C0, DEL, C1), NUL, and the invisible format characters that make
    /// a name read as something else (bidi overrides: `gnp.exe` shown as `exe.png`).
    static func isRemoved(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0...0x1F, 0x7F...0x9F: return true
        case 0x200B...0x200F, 0x202A...0x202E, 0x2060...0x2069, 0xFEFF: return true
        default: return false
        }
    }

    /// At most `limit` UTF-8 bytes, keeping the extension (what the receiver's page and
    /// the daemon's media type go by) and cutting only between characters.
    static func truncated(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        var stem = Substring(name)
        var ext = Substring("")
        if let dot = name.lastIndex(of: "."), name.distance(from: dot, to: name.endIndex) <= 16 {
            stem = name[..<dot]
            ext = name[dot...]
        }
        var out = ""
        for character in stem {
            if out.utf8.count + String(character).utf8.count + ext.utf8.count > limit { break }
            out.append(character)
        }
        return out + ext
    }
}
