/// A short "status / away" line a node shows its peers next to its name ("in a meeting
/// until 3"). Sent in a `status` record at the start of each session and whenever it
/// changes; empty means "no status".
///
/// The same rules as a display name keep it from faking lines or looking like something
/// else (no control, line-separator, bidi or invisible characters; NFC), with a longer
/// limit, `WireLimits.maxStatusBytes`.
public struct PresenceStatus: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public static let none = PresenceStatus(unchecked: "")

    private init(unchecked text: String) { self.text = text }

    public init(utf8 bytes: [UInt8]) throws(PresenceStatusError) {
        guard bytes.count <= WireLimits.maxStatusBytes else { throw .tooLong(bytes: bytes.count) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .notUTF8 }
        for scalar in text.unicodeScalars where CardFieldRules.isForbiddenInDisplayName(scalar) {
            throw .forbiddenCharacter(codePoint: scalar.value)
        }
        guard Array(text.utf8) == Array(text._nfcCodeUnits) else { throw .notNormalized }
        self.text = text
    }

    /// Text typed by a person: normalized to NFC first, then checked.
    public init(typed text: String) throws(PresenceStatusError) {
        try self.init(utf8: Array(CardFieldRules.nfc(text).utf8))
    }

    public var isEmpty: Bool { text.isEmpty }
    public var description: String { text }
}

public enum PresenceStatusError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLong(bytes: Int)
    case notUTF8
    case forbiddenCharacter(codePoint: UInt32)
    case notNormalized

    public var description: String {
        switch self {
        case .tooLong(let n): return "a status of \(n) bytes exceeds \(WireLimits.maxStatusBytes) bytes; shorten it"
        case .notUTF8: return "a status must be UTF-8 text"
        case .forbiddenCharacter(let c):
            return
                "a status may not contain U+\(String(c, radix: 16, uppercase: true)) (control, line break or invisible character); use one plain line"
        case .notNormalized: return "a status must be in Unicode NFC"
        }
    }
}
