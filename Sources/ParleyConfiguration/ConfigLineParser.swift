import ParleyControlProtocol

/// Reads one line of the config file: the TOML subset parleyd understands.
///
/// A line is blank, a comment, the `[parleyd]` header, or `key = value` with an
/// optional trailing comment. Values: basic "strings" (escapes \b \t \n \f \r \" \\
/// \uXXXX \UXXXXXXXX), literal 'strings', decimal integers (with optional sign and
/// `_` between digits), true/false, and arrays of strings, which may span lines (with
/// comments and a trailing comma, as TOML allows): `ConfigFile` then hands the parser the
/// statement's lines joined, and errors name the physical line. Everything else
/// TOML has (floats, dates, multi-line strings, inline tables, dotted keys) is refused
/// with a message saying so, so a file we accept means the same thing to any TOML reader.
struct ConfigLineParser {
    enum Statement: Equatable {
        case empty
        case table(String)
        case keyValue(key: String, value: ConfigValue)
    }

    private let bytes: [UInt8]
    private let location: ConfigLocation
    private var index = 0
    /// The key being parsed, to name it in value errors.
    private var currentKey: String?
    /// The statement ended inside an array: with the next line appended it may be whole.
    private(set) var needsMoreLines = false

    init(line: [UInt8], location: ConfigLocation) {
        self.bytes = line
        self.location = location
    }

    mutating func parse() throws(ConfigError) -> Statement {
        skipWhitespace()
        guard let first = peek() else { return .empty }
        switch first {
        case UInt8(ascii: "#"):
            try finishLine()
            return .empty
        case UInt8(ascii: "["):
            return try parseTableHeader()
        case UInt8(ascii: "\""), UInt8(ascii: "'"):
            throw syntax("quoted keys are not supported; write the key bare, like listen = [...]")
        default:
            let key = try parseBareKey()
            skipWhitespace()
            if peek() == UInt8(ascii: ".") {
                throw syntax("dotted keys are not supported ('\(key).…'); put options under [\(ConfigFile.tableName)]")
            }
            guard peek() == UInt8(ascii: "=") else { throw syntax("expected '=' after key '\(key)'") }
            index += 1
            currentKey = key
            skipWhitespace()
            let value = try parseValue()
            try finishLine()
            return .keyValue(key: key, value: value)
        }
    }

    // MARK: - Structure

    private mutating func parseTableHeader() throws(ConfigError) -> Statement {
        index += 1  // '['
        if peek() == UInt8(ascii: "[") {
            throw syntax("arrays of tables ([[...]]) are not supported; only [\(ConfigFile.tableName)] is allowed")
        }
        skipWhitespace()
        let name = try parseBareKey()
        skipWhitespace()
        guard peek() == UInt8(ascii: "]") else {
            throw syntax("expected ']' to close the table header (only [\(ConfigFile.tableName)] is allowed)")
        }
        index += 1
        try finishLine()
        return .table(name)
    }

    private mutating func parseBareKey() throws(ConfigError) -> String {
        let start = index
        while let byte = peek(), Self.isBareKeyByte(byte) { index += 1 }
        guard index > start else {
            throw syntax("expected a key (letters, digits, '_' or '-'), got \(describeNext())")
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// After a statement only whitespace and a comment may follow.
    private mutating func finishLine() throws(ConfigError) {
        skipWhitespace()
        guard let byte = peek() else { return }
        guard byte == UInt8(ascii: "#") else {
            throw syntax("unexpected \(describeNext()) after the value (comments start with '#')")
        }
        index += 1
        while let byte = peek() {
            // TOML forbids control characters in comments; they are also a sign of a
            // binary or mangled file.
            if Self.isForbiddenControl(byte) { throw syntax("control character (0x\(hex(byte))) in comment") }
            index += 1
        }
    }

    // MARK: - Values

    private mutating func parseValue() throws(ConfigError) -> ConfigValue {
        guard let first = peek() else { throw syntax("missing value after '='") }
        switch first {
        case UInt8(ascii: "\""):
            if startsWith("\"\"\"") { throw syntax("multi-line strings (\"\"\") are not supported") }
            return .string(try parseBasicString())
        case UInt8(ascii: "'"):
            if startsWith("'''") { throw syntax("multi-line strings (''') are not supported") }
            return .string(try parseLiteralString())
        case UInt8(ascii: "["):
            return .stringArray(try parseStringArray())
        case UInt8(ascii: "{"):
            throw syntax("inline tables ({...}) are not supported")
        case UInt8(ascii: "t"), UInt8(ascii: "f"):
            return .boolean(try parseBoolean())
        case UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return .integer(try parseInteger())
        default:
            throw syntax(
                "expected a value (\"string\", 'string', integer, true, false or [\"array\"]), got \(describeNext())")
        }
    }

    private mutating func parseBoolean() throws(ConfigError) -> Bool {
        let token = takeToken()
        switch token {
        case "true": return true
        case "false": return false
        default: throw syntax("expected true or false, got \(TextEscaping.quoted(token)) (strings need quotes)")
        }
    }

    private mutating func parseInteger() throws(ConfigError) -> Int64 {
        let token = takeToken()
        var digits = Substring(token)
        var negative = false
        if let sign = digits.first, sign == "+" || sign == "-" {
            negative = sign == "-"
            digits = digits.dropFirst()
        }
        if digits.hasPrefix("0x") || digits.hasPrefix("0o") || digits.hasPrefix("0b") {
            throw syntax("only decimal integers are supported, got \(TextEscaping.quoted(token))")
        }
        if digits.contains(where: { $0 == "." || $0 == "e" || $0 == "E" || $0 == ":" })
            || digits == "inf" || digits == "nan"
        {
            throw syntax("only integers are supported (no floats or dates), got \(TextEscaping.quoted(token))")
        }
        // TOML: no leading zeros, '_' only between digits.
        let valid =
            !digits.isEmpty
            && digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == "_") })
            && digits.first != "_" && digits.last != "_" && !digits.contains("__")
            && !(digits.count > 1 && digits.first == "0")
        guard valid else { throw syntax("invalid integer \(TextEscaping.quoted(token))") }
        let plain = String(digits.filter { $0 != "_" })
        guard let magnitude = Int64(negative ? "-" + plain : plain) else {
            throw syntax("integer \(TextEscaping.quoted(token)) is out of range")
        }
        return magnitude
    }

    private mutating func parseStringArray() throws(ConfigError) -> [String] {
        index += 1  // '['
        var items: [String] = []
        while true {
            skipWhitespace()
            try skipArrayWhitespace()
            guard let byte = peek() else {
                needsMoreLines = true
                throw syntax("missing ']' to close the array")
            }
            if byte == UInt8(ascii: "]") {
                index += 1
                return items
            }
            switch byte {
            case UInt8(ascii: "\""):
                if startsWith("\"\"\"") { throw syntax("multi-line strings (\"\"\") are not supported") }
                items.append(try parseBasicString())
            case UInt8(ascii: "'"):
                if startsWith("'''") { throw syntax("multi-line strings (''') are not supported") }
                items.append(try parseLiteralString())
            default:
                throw syntax("arrays may only contain strings, got \(describeNext())")
            }
            try skipArrayWhitespace()
            guard let separator = peek() else {
                needsMoreLines = true
                throw syntax("missing ']' to close the array")
            }
            if separator == UInt8(ascii: ",") {
                index += 1
            } else if separator != UInt8(ascii: "]") {
                throw syntax("expected ',' or ']' in array, got \(describeNext())")
            }
        }
    }

    private mutating func parseLiteralString() throws(ConfigError) -> String {
        index += 1  // opening '
        let start = index
        while let byte = peek() {
            if byte == UInt8(ascii: "'") {
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                index += 1
                return text
            }
            if Self.isForbiddenControl(byte) { throw syntax("control character (0x\(hex(byte))) in string") }
            index += 1
        }
        throw syntax("unterminated string (missing closing ')")
    }

    private mutating func parseBasicString() throws(ConfigError) -> String {
        index += 1  // opening "
        var out: [UInt8] = []
        while let byte = peek() {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try appendEscape(to: &out)
            default:
                if Self.isForbiddenControl(byte) { throw syntax("control character (0x\(hex(byte))) in string") }
                out.append(byte)
            }
        }
        throw syntax("unterminated string (missing closing \")")
    }

    private mutating func appendEscape(to out: inout [UInt8]) throws(ConfigError) {
        guard let escape = peek() else { throw syntax("unterminated string (missing closing \")") }
        index += 1
        switch escape {
        case UInt8(ascii: "b"): out.append(0x08)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "f"): out.append(0x0C)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "u"): out.append(contentsOf: try parseUnicodeEscape(digits: 4))
        case UInt8(ascii: "U"): out.append(contentsOf: try parseUnicodeEscape(digits: 8))
        default:
            throw syntax(
                "unknown escape '\\\(TextEscaping.escaped(String(decoding: [escape], as: UTF8.self), escapeQuotes: false, maxScalars: 1))' in string (use \\\\ for a backslash)"
            )
        }
    }

    private mutating func parseUnicodeEscape(digits count: Int) throws(ConfigError) -> [UInt8] {
        guard index + count <= bytes.count else { throw syntax("\\u escape needs \(count) hex digits") }
        var value: UInt32 = 0
        for byte in bytes[index..<(index + count)] {
            guard let digit = Self.hexValue(byte) else { throw syntax("\\u escape needs \(count) hex digits") }
            value = value << 4 | UInt32(digit)
        }
        index += count
        // Surrogates and values above U+10FFFF are not characters.
        guard let scalar = Unicode.Scalar(value) else {
            throw syntax("\\u escape U+\(String(value, radix: 16, uppercase: true)) is not a Unicode character")
        }
        return Array(String(Character(scalar)).utf8)
    }

    // MARK: - Bytes

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private func startsWith(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        return text.withUTF8Buffer { prefix in bytes[index..<(index + count)].elementsEqual(prefix) }
    }

    /// Inside an array: spaces, line breaks and comments (to the end of their line).
    private mutating func skipArrayWhitespace() throws(ConfigError) {
        while let byte = peek() {
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"):
                index += 1
            case UInt8(ascii: "#"):
                while let c = peek(), c != UInt8(ascii: "\n") {
                    if Self.isForbiddenControl(c) { throw syntax("control character (0x\(hex(c))) in comment") }
                    index += 1
                }
            default:
                return
            }
        }
    }

    private mutating func skipWhitespace() {
        while let byte = peek(), byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") { index += 1 }
    }

    /// The run of characters up to the next delimiter, for numbers and booleans.
    private mutating func takeToken() -> String {
        let start = index
        while let byte = peek(),
            byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t"), byte != UInt8(ascii: "#"),
            byte != UInt8(ascii: ","), byte != UInt8(ascii: "]")
        {
            index += 1
        }
        return String(decoding: bytes[start..<index], as: UTF8.self)
    }

    /// The next few characters, quoted, for "got ..." in messages.
    private func describeNext() -> String {
        guard index < bytes.count else { return "end of line" }
        let end = min(bytes.count, index + 12)
        return TextEscaping.quoted(String(decoding: bytes[index..<end], as: UTF8.self))
    }

    private func syntax(_ message: String) -> ConfigError {
        // A statement may span lines (an array): name the line the error is on.
        let breaks = bytes[..<min(index, bytes.count)].reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        let here = ConfigLocation(file: location.file, line: location.line + breaks)
        if let currentKey { return .syntax(here, "'\(currentKey)': \(message)") }
        return .syntax(here, message)
    }

    private func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }

    static func isBareKeyByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// TOML allows tab but no other ASCII control character outside escapes.
    static func isForbiddenControl(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
