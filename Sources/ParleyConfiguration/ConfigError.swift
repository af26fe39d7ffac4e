import ParleyControlProtocol

/// A place in a config file, printed as "parleyd.toml:7".
public struct ConfigLocation: Equatable, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int

    public init(file: String, line: Int) {
        self.file = file
        self.line = line
    }

    public var description: String { "\(file):\(line)" }
}

/// Why a config file or a set of options was refused. The description names the file,
/// the line and the key, so an operator can fix it without reading code.
public enum ConfigError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be opened or read (reason is strerror text).
    case unreadable(path: String, reason: String)
    case fileTooLarge(file: String, limit: Int)
    case notUTF8(file: String)
    case lineTooLong(ConfigLocation, limit: Int)
    /// Not the TOML subset we read; the message says what was expected.
    case syntax(ConfigLocation, String)
    case tableNotAllowed(ConfigLocation, name: String)
    case unknownKey(ConfigLocation, key: String, suggestion: String?)
    case duplicateKey(ConfigLocation, key: String, firstLine: Int)
    /// A value of the wrong type or out of range: "'mdns' must be true or false, got \"yes\"".
    case invalidValue(ConfigLocation, key: String, expected: String, got: String)
    /// A value of the right type that is still unusable, with the reason.
    case invalidEntry(ConfigLocation, key: String, reason: String)
    /// A problem in the merged options, which may come from flags rather than a file.
    case invalidSetting(key: String, reason: String)

    /// Keys are echoed from the file; this keeps a hostile one from flooding the message.
    static let maxEchoedKeyLength = 64

    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            "\(path): cannot read config file: \(reason)"
        case .fileTooLarge(let file, let limit):
            "\(file): config file is larger than \(limit) bytes"
        case .notUTF8(let file):
            "\(file): config file is not valid UTF-8"
        case .lineTooLong(let location, let limit):
            "\(location): line is longer than \(limit) bytes"
        case .syntax(let location, let message):
            "\(location): \(message)"
        case .tableNotAllowed(let location, let name):
            "\(location): unsupported table [\(Self.echo(name))]; only [\(ConfigFile.tableName)] is allowed"
        case .unknownKey(let location, let key, let suggestion):
            "\(location): unknown key '\(Self.echo(key))'" + (suggestion.map { " (did you mean '\($0)'?)" } ?? "")
        case .duplicateKey(let location, let key, let firstLine):
            "\(location): duplicate key '\(Self.echo(key))' (first set on line \(firstLine))"
        case .invalidValue(let location, let key, let expected, let got):
            "\(location): '\(key)' must be \(expected), got \(got)"
        case .invalidEntry(let location, let key, let reason):
            "\(location): '\(key)': \(reason)"
        case .invalidSetting(let key, let reason):
            "'\(key)': \(reason)"
        }
    }

    private static func echo(_ key: String) -> String {
        TextEscaping.escaped(key, escapeQuotes: false, maxScalars: maxEchoedKeyLength)
    }
}
