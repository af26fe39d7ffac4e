/// RFC 4648 base32 (section 6), lower-case alphabet `a-z2-7`, no padding.
///
/// Only what fingerprints need: encoding and a membership test for user input.
enum Base32 {
    /// The RFC 4648 alphabet in lower case. It contains no `0`, `1`, `8` or `9`,
    /// so `o`/`0` and `l`/`1` cannot be confused when a fingerprint is read aloud or typed.
    static let alphabet: [UInt8] = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    /// Encodes `bytes` without padding: 5 bits per character, most significant first.
    static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 8 + 4) / 5)
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                bits -= 5
                out.append(alphabet[Int((buffer >> UInt32(bits)) & 0x1f)])
            }
        }
        if bits > 0 {
            out.append(alphabet[Int((buffer << UInt32(5 - bits)) & 0x1f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// True if `c` (ASCII, already lower-cased) is in the alphabet.
    static func isDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "2")...UInt8(ascii: "7")).contains(c)
    }
}
