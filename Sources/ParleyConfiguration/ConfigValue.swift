import ParleyControlProtocol

/// A value as written in the config file, before it is checked against its key.
public enum ConfigValue: Equatable, Sendable, CustomStringConvertible {
    case string(String)
    case integer(Int64)
    case boolean(Bool)
    case stringArray([String])

    /// Array elements shown in error messages; the rest is elided.
    static let maxEchoedElements = 4

    /// How the value is echoed in error messages: strings quoted and escaped, cut short.
    public var description: String {
        switch self {
        case .string(let text):
            TextEscaping.quoted(text)
        case .integer(let number):
            String(number)
        case .boolean(let flag):
            flag ? "true" : "false"
        case .stringArray(let items):
            "[" + items.prefix(Self.maxEchoedElements).map { TextEscaping.quoted($0) }.joined(separator: ", ")
                + (items.count > Self.maxEchoedElements ? ", …]" : "]")
        }
    }

    /// "a string", "an integer", … for messages about type mismatches.
    var typeName: String {
        switch self {
        case .string: "a string"
        case .integer: "an integer"
        case .boolean: "a boolean"
        case .stringArray: "an array"
        }
    }
}
