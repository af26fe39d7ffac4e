import ParleyCore

/// What a fingerprint a person typed confirms, where they vouch for a key (`trust.verify`,
/// `trust.replace`). A prefix finds a peer, but it never vouches for one: another key could
/// share it (a LAN attacker can grind keys for a short prefix), so the whole fingerprint is
/// needed. Pure.
public enum FingerprintConfirmation {
    /// Characters in a whole fingerprint, separators removed.
    public static let wholeLength = Fingerprint.characterCount

    public enum Outcome: Sendable, Equatable {
        /// The whole fingerprint typed, normalised (`Fingerprint.normalize`).
        case whole(String)
        /// Not the expected fingerprint (or not a fingerprint at all).
        case mismatch
        /// Only part of a fingerprint (of the expected one, when one is expected).
        case tooShort(needed: Int)
    }

    /// Reads what a person typed as a whole fingerprint. With `expected`, a prefix that
    /// does not start it is a mismatch (the person is comparing against another key),
    /// not merely too short.
    public static func read(_ typed: String, expected: String? = nil) -> Outcome {
        guard let given = Fingerprint.normalize(typed) else { return .mismatch }
        if given.count < wholeLength {
            if let expected, let e = Fingerprint.normalize(expected), !e.hasPrefix(given) { return .mismatch }
            return .tooShort(needed: wholeLength)
        }
        return .whole(given)
    }

    /// Whether `typed` confirms `key`: the whole fingerprint, and `key`'s.
    public static func confirm(_ typed: String, is key: IdentityPublicKey) -> Outcome {
        let expected = Fingerprint(key).description
        let outcome = read(typed, expected: expected)
        guard case .whole(let given) = outcome else { return outcome }
        return names(given, key) ? outcome : .mismatch
    }

    /// Whether the normalised whole fingerprint `given` is `key`'s.
    public static func names(_ given: String, _ key: IdentityPublicKey) -> Bool {
        Fingerprint.normalize(Fingerprint(key).description) == given
    }
}
