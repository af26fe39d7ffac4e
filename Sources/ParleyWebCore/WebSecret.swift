import CSodium

/// A 256-bit random secret from libsodium, written as 64 lower-case hex digits: the sign-in
/// secret (`WebSignInKey`) and the nonces of the sign-in handshake. Compared in constant
/// time, so a guesser on loopback learns nothing from response times.
public struct WebSecret: Sendable, Hashable, CustomStringConvertible {
    public static let byteCount = 32
    /// The secret's text form (what goes into the sign-in link's fragment).
    public let text: String

    /// A fresh secret from `randombytes_buf`.
    public static func random() -> WebSecret {
        WebSodium.ensureInitialised()
        var bytes = [UInt8](repeating: 0, count: byteCount)
        randombytes_buf(&bytes, byteCount)
        return WebSecret(text: hex(bytes))
    }

    /// Lower-case hex of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { hexDigits[Int($0 >> 4)] + hexDigits[Int($0 & 0x0f)] }.joined()
    }

    /// The secret's bytes (its text is checked hex, so every pair decodes).
    public var bytes: [UInt8] {
        let digits = Array(text.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x61 + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    /// Builds a secret from its text; nil unless exactly 64 lower-case hex digits.
    public init?(parsing text: Substring) {
        guard text.utf8.count == WebSecret.byteCount * 2,
            text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else { return nil }
        self.text = String(text)
    }

    private init(text: String) { self.text = text }

    /// Whether `candidate` is this secret, in time that does not depend on where they differ
    /// (`sodium_memcmp`). A candidate of the wrong length is refused at once: the length is
    /// public.
    public func matches(_ candidate: Substring) -> Bool {
        let mine = Array(text.utf8)
        let theirs = Array(candidate.utf8)
        guard mine.count == theirs.count else { return false }
        return sodium_memcmp(mine, theirs, mine.count) == 0
    }

    /// Never the secret itself: a secret must not reach a log by accident.
    public var description: String { "WebSecret(…)" }

    private static let hexDigits = (0..<16).map { String($0, radix: 16) }
}

enum WebSodium {
    /// `sodium_init` is idempotent and thread-safe; called before the first random draw.
    static func ensureInitialised() {
        precondition(sodium_init() >= 0, "libsodium could not be initialised")
    }
}
