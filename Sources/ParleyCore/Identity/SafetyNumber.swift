/// A number two people compare (in person or over a trusted channel) to check that each
/// holds the other's real identity key. Both sides compute the same string.
///
/// `digest = SHA-512("parley-safety-v1" || min(pkA, pkB) || max(pkA, pkB))`, keys ordered
/// lexicographically by bytes; the first 60 bytes are 12 chunks of 5 bytes; each chunk,
/// read as a big-endian 40-bit integer, mod 100000, is printed as 5 zero-padded digits;
/// the 12 groups are joined with single spaces. See docs/PROTOCOL.md.
public enum SafetyNumber {
    /// Domain separation from every other hash Parley computes.
    static let domain: [UInt8] = Array("parley-safety-v1".utf8)
    /// 12 groups of 5 digits: ~199 bits, easily read aloud as a short list of numbers.
    public static let groupCount = 12
    /// Decimal digits per group.
    public static let digitsPerGroup = 5
    /// Bytes of digest per group: 40 bits reduced mod 10^5 has a bias below 10^-7.
    static let bytesPerGroup = 5
    static let modulus: UInt64 = 100_000

    public static func compute(_ a: IdentityPublicKey, _ b: IdentityPublicKey) -> String {
        let (low, high) = a.bytes.lexicographicallyPrecedes(b.bytes) ? (a, b) : (b, a)
        let digest = Sodium.sha512(domain, low.bytes, high.bytes)
        var groups: [String] = []
        for g in 0..<groupCount {
            let chunk = digest[(g * bytesPerGroup)..<((g + 1) * bytesPerGroup)]
            let value = chunk.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) } % modulus
            let digits = String(value)
            groups.append(String(repeating: "0", count: digitsPerGroup - digits.count) + digits)
        }
        return groups.joined(separator: " ")
    }
}
