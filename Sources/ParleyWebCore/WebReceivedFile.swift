/// A received file served to the page (`GET /files/ID`, docs/WEB.md "Files"): what kind of
/// bytes it is, and the headers it goes out with. Pure: `WebServer` reads the file (a
/// descriptor from the daemon's `files.open`) and asks this what to say.
///
/// Think of the sender as hostile: the name and the bytes are theirs. So the type is never
/// taken from the name or from anything the sender claimed, only from the bytes' magic
/// number, and only four raster formats a browser decodes without running anything are
/// ever called images; everything else is `application/octet-stream`. The response is an
/// attachment, `nosniff`, and sandboxed by its CSP, so even opened directly it is never a
/// document of the page's origin (an HTML or SVG file named `photo.png` stays bytes).
public enum WebRasterType: String, Sendable, CaseIterable {
    case png = "image/png"
    case jpeg = "image/jpeg"
    case gif = "image/gif"
    case webp = "image/webp"

    /// How many leading bytes `detect` needs at most.
    public static let magicLength = 12

    /// The raster type whose magic number `prefix` starts with, or nil.
    public static func detect(_ prefix: some Collection<UInt8>) -> WebRasterType? {
        let b = Array(prefix.prefix(magicLength))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            b.count >= offset + magic.count && Array(b[offset..<offset + magic.count]) == magic
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return .webp }
        return nil
    }
}

public enum WebReceivedFile {
    /// `/files/` + a transfer's full id (32 lowercase hex digits): never a prefix, so a
    /// request names exactly one file.
    public static let pathPrefix = "/files/"
    public static let idLength = 32

    /// The id in `path`, or nil when the path is not a received file's.
    public static func id(inPath path: Substring) -> String? {
        guard path.hasPrefix(pathPrefix) else { return nil }
        let id = path.dropFirst(pathPrefix.count)
        guard id.utf8.count == idLength,
            id.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        return String(id)
    }

    /// The policy on a file response: nothing in it may run, load, frame or be framed,
    /// whatever the bytes are (`sandbox` gives a document opened from it an opaque origin
    /// of its own, so not even a bug elsewhere makes it the page's).
    public static let contentSecurityPolicy = "sandbox; default-src 'none'; frame-ancestors 'none'"

    /// Every header of a received file's response but `Content-Length`: the type from the
    /// bytes (`prefix`, the file's first `WebRasterType.magicLength` bytes), the name as an
    /// attachment's.
    public static func headers(name: String, prefix: some Collection<UInt8>) -> [(name: String, value: String)] {
        let type = WebRasterType.detect(prefix)?.rawValue ?? "application/octet-stream"
        return [
            ("Content-Type", type),
            ("Content-Disposition", contentDisposition(name: name)),
            ("Content-Security-Policy", contentSecurityPolicy),
            ("X-Content-Type-Options", "nosniff"),
            ("Referrer-Policy", "no-referrer"),
            ("X-Frame-Options", "DENY"),
            ("Cache-Control", "no-store"),
            ("Cross-Origin-Opener-Policy", "same-origin"),
            ("Cross-Origin-Resource-Policy", "same-origin")
        ]
    }

    /// `attachment; filename="ASCII"; filename*=UTF-8''PERCENT-ENCODED` (RFC 6266 with
    /// RFC 5987's extended value). The name is the sender's: first sanitized as an upload's
    /// (`WebUploadName`: one path component, no control or bidi characters, no leading dot
    /// or dash, bounded), then the quoted fallback keeps only printable ASCII other than
    /// `"` and `\` (each other character an `_`), and the extended value percent-encodes
    /// every byte outside RFC 5987's attr-char set. No quote, semicolon, CR or LF from the
    /// sender reaches the header.
    public static func contentDisposition(name: String) -> String {
        let clean = WebUploadName.sanitize(name)
        var fallback = ""
        for scalar in clean.unicodeScalars {
            let v = scalar.value
            fallback.append((0x20...0x7E).contains(v) && v != 0x22 && v != 0x5C ? Character(scalar) : "_")
        }
        var encoded = ""
        for byte in clean.utf8 {
            if isAttrChar(byte) {
                encoded.append(Character(Unicode.Scalar(byte)))
            } else {
                let hex = Array("0123456789ABCDEF")
                encoded.append("%")
                encoded.append(hex[Int(byte >> 4)])
                encoded.append(hex[Int(byte & 0xF)])
            }
        }
        return "attachment; filename=\"\(fallback)\"; filename*=UTF-8''\(encoded)"
    }

    /// RFC 5987 attr-char: ALPHA / DIGIT / "!" / "#" / "$" / "&" / "+" / "-" / "." / "^" /
    /// "_" / "`" / "|" / "~".
    static func isAttrChar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "+"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"),
            UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }
}
