/// A short, human-comparable name for an identity public key.
///
/// `fingerprint = base32(SHA-256("parley-fingerprint-v1" || identityPublicKey)[0..<20])`,
/// shown as 8 groups of 4 characters separated by `-`, e.g.
/// `abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567`. See docs/PROTOCOL.md, "Identity and fingerprints".
public struct Fingerprint: Hashable, Sendable, CustomStringConvertible {
    /// Domain separation: a fingerprint can never equal any other SHA-256 Parley computes.
    static let domain: [UInt8] = Array("parley-fingerprint-v1".utf8)
    /// 160 bits: finding a second key with a given fingerprint costs ~2^160 hashes, and
    /// even against 2^32 fingerprints at once (multi-target) ~2^128. Collisions (2^80)
    /// do not matter: both colliding keys would belong to the attacker.
    public static let byteLength = 20
    /// 160 bits / 5 bits per base32 character: exactly 32 characters, so no padding.
    public static let characterCount = 32
    /// Characters per displayed group: short enough to read aloud in one breath.
    public static let groupLength = 4
    /// Shortest prefix `matches(prefix:)` accepts: 20 bits. Shorter prefixes match too many
    /// keys to mean anything, and a user typing 1-3 characters almost certainly made a slip.
    public static let minimumPrefixLength = 4

    /// The 32 base32 characters without separators.
    public let compact: String

    public init(_ key: IdentityPublicKey) {
        let digest = Sodium.sha256(Self.domain, key.bytes)
        compact = Base32.encode(Array(digest.prefix(Self.byteLength)))
    }

    /// Grouped for display: `xxxx-xxxx-xxxx-xxxx-xxxx-xxxx-xxxx-xxxx`.
    public var description: String {
        var groups: [Substring] = []
        var rest = Substring(compact)
        while !rest.isEmpty {
            groups.append(rest.prefix(Self.groupLength))
            rest = rest.dropFirst(Self.groupLength)
        }
        return groups.joined(separator: "-")
    }

    /// Canonicalises what a user typed or pasted: lower-cases it and removes `-`, spaces
    /// and `:`. Returns nil if anything else outside the base32 alphabet remains (including
    /// `0`, `1`, `8`, `9`: they never occur in a fingerprint, so they signal a typo).
    public static func normalize(_ userInput: String) -> String? {
        var out = [UInt8]()
        for c in userInput.utf8 {
            switch c {
            case UInt8(ascii: "-"), UInt8(ascii: " "), UInt8(ascii: ":"):
                continue
            case UInt8(ascii: "A")...UInt8(ascii: "Z"):
                out.append(c + 32)
            default:
                guard Base32.isDigit(c) else { return nil }
                out.append(c)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// True if the normalised `prefix` has at least `minimumPrefixLength` characters and
    /// this fingerprint starts with it.
    public func matches(prefix: String) -> Bool {
        guard let p = Self.normalize(prefix), p.utf8.count >= Self.minimumPrefixLength else { return false }
        return compact.hasPrefix(p)
    }
}

extension IdentityPublicKey {
    /// This key's fingerprint.
    public var fingerprint: Fingerprint { Fingerprint(self) }
}
