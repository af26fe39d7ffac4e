/// The name a receiver gives an offered file (docs/PROTOCOL.md "Files", "Names"). The
/// offered name is hostile: it is never used as a path, only as the last component that
/// this type produces, inside the download directory.
public enum FileName {
    /// Windows device names: harmless here, but a file called `CON.txt` copied to a
    /// Windows share or a USB stick is unopenable, and a hostile sender may count on it.
    static let deviceNames: Set<String> = {
        var s: Set<String> = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
        for i in 1...9 {
            s.insert("COM\(i)")
            s.insert("LPT\(i)")
        }
        return s
    }()

    /// The safe base name for `offered`: no directory part, no control or bidirectional
    /// formatting characters, no leading dots (hidden files, `..`), no device names,
    /// at most `FileLimits.maxStoredNameBytes` bytes with the extension kept; never empty.
    public static func sanitize(_ offered: String) -> String {
        var name = offered
        if let slash = name.lastIndex(where: { $0 == "/" || $0 == "\\" }) {
            name = String(name[name.index(after: slash)...])
        }
        name = String(
            String.UnicodeScalarView(
                name.unicodeScalars.filter { s in
                    let v = s.value
                    if v < 0x20 || v == 0x7F || (0x80...0x9F).contains(v) { return false }
                    // Bidirectional embeddings, overrides and isolates: "exe.txt" shown as "txt.exe".
                    if (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v) { return false }
                    if v == 0x200E || v == 0x200F || v == 0x061C || v == 0xFEFF { return false }
                    // Not a path separator or a character other systems refuse in names.
                    if v == 0x3A || v == 0x2A || v == 0x3F || v == 0x22 || v == 0x3C || v == 0x3E || v == 0x7C {
                        return false
                    }
                    return true
                }))
        while let f = name.first, f == "." || f == " " { name.removeFirst() }
        while let l = name.last, l == "." || l == " " { name.removeLast() }
        if name.isEmpty { return "file" }
        let stem = name.split(separator: ".", maxSplits: 1).first.map(String.init) ?? name
        if deviceNames.contains(stem.uppercased()) { name = "file-" + name }
        return cut(name, to: FileLimits.maxStoredNameBytes)
    }

    /// The `n`th alternative of a taken name: `report.pdf` → `report (1).pdf`.
    public static func numbered(_ name: String, _ n: Int) -> String {
        guard n > 0 else { return name }
        let (stem, ext) = split(name)
        return "\(stem) (\(n))\(ext)"
    }

    /// Stem and extension (with its dot); a name without a dot, or only a leading one, has none.
    static func split(_ name: String) -> (String, String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return (name, "") }
        let ext = String(name[dot...])
        // An "extension" of 16 bytes or more is part of the name (`notes.from the meeting`).
        guard ext.utf8.count <= 16 else { return (name, "") }
        return (String(name[..<dot]), ext)
    }

    static func cut(_ name: String, to maxBytes: Int) -> String {
        guard name.utf8.count > maxBytes else { return name }
        let (stem, ext) = split(name)
        let room = max(1, maxBytes - ext.utf8.count)
        return stem.utf8Prefix(maxBytes: room) + ext
    }
}
