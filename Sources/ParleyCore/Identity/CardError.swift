/// Why a card could not be issued or decoded. Every rejection has its own case so
/// logs and tests can tell them apart.
public enum CardError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes ended before the field `field` was complete.
    case truncated(field: String)
    /// A complete card was followed by `count` more bytes.
    case trailingBytes(count: Int)
    /// The first byte names a card format this build does not know.
    case unsupportedVersion(UInt8)
    /// The display name has zero bytes.
    case emptyDisplayName
    /// The display name is longer than `Card.maxDisplayNameLength` UTF-8 bytes.
    case displayNameTooLong(bytes: Int)
    /// The display name bytes are not valid UTF-8.
    case displayNameNotUTF8
    /// The display name contains a control, line-break or bidirectional-override code point.
    case displayNameForbiddenCharacter(codePoint: UInt32)
    /// The name is not in Unicode Normalization Form C (the same text encoded another way
    /// would be another name, and would sign differently).
    case displayNameNotNormalized
    /// More combining marks in a row than any script needs (they stack over other text).
    case displayNameTooManyCombiningMarks(limit: Int)
    /// The host name is longer than `Card.maxHostNameLength` bytes.
    case hostNameTooLong(bytes: Int)
    /// The host name is not ASCII letters, digits and hyphens in dot-separated labels.
    case invalidHostName(reason: String)
    /// An expiry of 0 (that value means "no expiry" on the wire) or not after `issuedAt`.
    case invalidExpiry(issuedAt: UInt64, expiresAt: UInt64)
    /// The Ed25519 signature does not verify under the card's identity key.
    case badSignature

    public var description: String {
        switch self {
        case let .truncated(field):
            return "card is truncated: it ends inside the \(field) field"
        case let .trailingBytes(count):
            return "card has \(count) unexpected byte(s) after the signature"
        case let .unsupportedVersion(v):
            return
                "card format version \(v) is not supported (this build knows version \(Card.currentVersion)); upgrade Parley"
        case .emptyDisplayName:
            return "display name must not be empty"
        case let .displayNameTooLong(bytes):
            return "display name is \(bytes) bytes of UTF-8; the limit is \(Card.maxDisplayNameLength)"
        case .displayNameNotUTF8:
            return "display name is not valid UTF-8"
        case let .displayNameForbiddenCharacter(cp):
            let hex = String(cp, radix: 16, uppercase: true)
            return
                "display name contains the forbidden character U+\(String(repeating: "0", count: max(0, 4 - hex.count)) + hex) (control, format, invisible, line break or bidi character)"
        case .displayNameNotNormalized:
            return "display name is not in Unicode Normalization Form C"
        case let .displayNameTooManyCombiningMarks(limit):
            return "display name has more than \(limit) combining marks in a row"
        case let .hostNameTooLong(bytes):
            return "host name is \(bytes) bytes; the limit is \(Card.maxHostNameLength)"
        case let .invalidHostName(reason):
            return "host name is invalid: \(reason)"
        case let .invalidExpiry(issuedAt, expiresAt):
            return "expiry \(expiresAt) must be non-zero and later than issued-at \(issuedAt)"
        case .badSignature:
            return "card signature does not verify: the card was altered or not signed by its identity key"
        }
    }
}
