import ParleyCore

/// Whether a person's `trust.replace` may go ahead: the old contact's key is retired and its
/// queued messages move to the new key, so nothing changes unless every check passes (a
/// wrong key here sends the person's messages to someone else). Pure; the driver reads the
/// records and performs the replacement.
public enum KeyReplacementCheck {
    /// A key as the check needs it.
    public struct Key: Sendable, Equatable {
        public var identity: IdentityPublicKey
        /// The key a person replaced this one with, if any.
        public var replacedBy: IdentityPublicKey?

        public init(identity: IdentityPublicKey, replacedBy: IdentityPublicKey?) {
            self.identity = identity
            self.replacedBy = replacedBy
        }
    }

    public enum Refusal: Sendable, Equatable {
        /// No known peer has the named key (it must have connected once: its card is needed).
        case newKeyNotFound
        /// The named key is the old contact's own.
        case sameKey
        /// The named key was itself replaced: it cannot stand for anyone.
        case newKeyReplaced(by: IdentityPublicKey)
        /// The old contact's key was already replaced.
        case oldKeyReplaced(by: IdentityPublicKey)
        /// The safety number the person read is not the one computed with the new key.
        case safetyNumberMismatch
    }

    /// - `new`: the known key whose whole fingerprint the person named (nil: none).
    /// - `typedSafetyNumber`: what the person read from the other device, if they gave it;
    ///   `expectedSafetyNumber`: the one computed with the new key.
    public static func check(
        old: Key, new: Key?, typedSafetyNumber: String?, expectedSafetyNumber: String
    ) -> Refusal? {
        guard let new else { return .newKeyNotFound }
        guard new.identity != old.identity else { return .sameKey }
        if let by = new.replacedBy { return .newKeyReplaced(by: by) }
        if let by = old.replacedBy { return .oldKeyReplaced(by: by) }
        if let typedSafetyNumber, !safetyNumber(typedSafetyNumber, matches: expectedSafetyNumber) {
            return .safetyNumberMismatch
        }
        return nil
    }

    /// Its digits are the expected number's (separators, spaces and anything else a person
    /// types between the groups ignored); an empty expected number matches nothing.
    public static func safetyNumber(_ typed: String, matches expected: String) -> Bool {
        let digits = { (text: String) in text.filter { $0.isASCII && $0.isNumber } }
        let want = digits(expected)
        return !want.isEmpty && digits(typed) == want
    }
}
