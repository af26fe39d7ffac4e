/// One reaction: a short piece of text, usually one emoji ("👍", "👍🏽", "+1").
///
/// Bounded so a peer cannot hang a paragraph on someone's message: at most
/// `WireLimits.maxReactionBytes` bytes of UTF-8 and `WireLimits.maxReactionCharacters`
/// characters, no control, whitespace or invisible format characters except the zero-width
/// joiner and variation selectors that emoji sequences are built from.
public struct Reaction: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public init(utf8 bytes: [UInt8]) throws(ReactionError) {
        guard !bytes.isEmpty else { throw .empty }
        guard bytes.count <= WireLimits.maxReactionBytes else { throw .tooLong(bytes: bytes.count) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        try self.init(checked: text)
    }

    public init(_ text: String) throws(ReactionError) {
        try self.init(utf8: Array(text.utf8))
    }

    private init(checked text: String) throws(ReactionError) {
        guard text.count <= WireLimits.maxReactionCharacters else { throw .tooManyCharacters(text.count) }
        for scalar in text.unicodeScalars where Self.isForbidden(scalar) {
            throw .forbiddenCharacter(codePoint: scalar.value)
        }
        self.text = text
    }

    public var description: String { text }

    /// Control characters could drive a terminal, whitespace and invisible characters make a
    /// reaction that looks empty or like another. Emoji need U+200D (ZWJ) and the variation
    /// selectors U+FE0E/U+FE0F, and skin tones and flags are ordinary symbols, so those pass.
    static func isForbidden(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x200D, 0xFE0E, 0xFE0F: return false
        case 0xE0020...0xE007F: return false  // tag characters: subdivision flags (🏴󠁧󠁢󠁳󠁣󠁴󠁿)
        default: break
        }
        if scalar.properties.isWhitespace { return true }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator, .surrogate,
            .privateUse, .unassigned:
            return true
        default:
            return false
        }
    }
}

public enum ReactionError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case tooLong(bytes: Int)
    case tooManyCharacters(Int)
    case notUTF8
    case forbiddenCharacter(codePoint: UInt32)

    public var description: String {
        switch self {
        case .empty: return "a reaction must not be empty"
        case .tooLong(let n):
            return
                "a reaction of \(n) bytes exceeds \(WireLimits.maxReactionBytes) bytes; use one emoji or a short word"
        case .tooManyCharacters(let n):
            return
                "a reaction of \(n) characters exceeds \(WireLimits.maxReactionCharacters); use one emoji or a short word"
        case .notUTF8: return "a reaction must be UTF-8 text"
        case .forbiddenCharacter(let c):
            return
                "a reaction may not contain U+\(String(c, radix: 16, uppercase: true)) (control, space or invisible character)"
        }
    }
}
