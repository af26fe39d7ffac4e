#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A "HOST:PORT" endpoint from a flag or the config file: what to listen on or which
/// static peer to dial.
///
/// Accepted forms: `0.0.0.0:7744` (IPv4), `[::]:7744` or `[fe80::1%eth0]:7744`
/// (IPv6, always in brackets so the port is unambiguous), `alice.local:7744`
/// (a host name, resolved when used). Port 0 means "any free port" when listening.
public struct HostPort: Hashable, Sendable, LosslessStringConvertible {
    public enum Kind: Hashable, Sendable {
        case ipv4
        case ipv6
        case hostName
    }

    /// The host without brackets: "::1", "192.168.1.2", "fe80::1%eth0", "alice.local".
    public let host: String
    public let port: UInt16
    public let kind: Kind

    /// Longest accepted "HOST:PORT" text: a 253-byte DNS name plus ":65535" fits with
    /// room to spare; anything longer is garbage and is refused before parsing.
    public static let maxTextLength = 300
    /// DNS limits (RFC 1035): a name is at most 253 characters, a label at most 63.
    public static let maxHostNameLength = 253
    public static let maxLabelLength = 63
    /// Interface names (the IPv6 zone after '%') are at most IFNAMSIZ-1 = 15 bytes on Linux.
    public static let maxZoneLength = 15

    public init(host: String, port: UInt16) throws(HostPortError) {
        let kind = try Self.classify(host: host)
        self.host = host
        self.port = port
        self.kind = kind
    }

    /// Parses "HOST:PORT"; the error says what is wrong in words an operator can act on.
    public init(parsing text: String) throws(HostPortError) {
        guard !text.isEmpty else { throw .empty }
        guard text.utf8.count <= Self.maxTextLength else { throw .tooLong(limit: Self.maxTextLength) }
        let hostPart: String
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { throw .unterminatedBracket(text) }
            hostPart = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { throw .missingPort(text) }
            portPart = rest.dropFirst()
            guard hostPart.contains(":") else { throw .invalidIPv6(hostPart) }
        } else {
            guard let colon = text.lastIndex(of: ":") else { throw .missingPort(text) }
            hostPart = String(text[..<colon])
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { throw .unbracketedIPv6(text) }
            if hostPart.isEmpty { throw .missingHost(text) }
        }
        let port = try Self.parsePort(portPart, in: text)
        try self.init(host: hostPart, port: port)
    }

    public init?(_ description: String) {
        do { try self.init(parsing: description) } catch { return nil }
    }

    /// Round-trips through `init(parsing:)`: IPv6 hosts come back in brackets.
    public var description: String {
        kind == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    private static func parsePort(_ text: Substring, in whole: String) throws(HostPortError) -> UInt16 {
        guard !text.isEmpty else { throw .missingPort(whole) }
        // At most 5 digits: "65535"; checking the length first keeps Int parsing from
        // ever seeing a huge digit string.
        guard text.utf8.count <= 5, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
        else { throw .invalidPort(String(text)) }
        guard let value = Int(text), value <= Int(UInt16.max) else { throw .portOutOfRange(String(text)) }
        return UInt16(value)
    }

    private static func classify(host: String) throws(HostPortError) -> Kind {
        guard !host.isEmpty else { throw .missingHost(host) }
        // C functions below (inet_pton) would stop at a NUL and accept a prefix.
        guard !host.utf8.contains(0) else { throw .invalidHostName(host) }
        if host.contains(":") {
            try validateIPv6(host)
            return .ipv6
        }
        let bytes = Array(host.utf8)
        // All digits and dots: it is meant as an IPv4 address, so it must be one
        // ("256.1.1.1" is a typo, not a host name).
        if bytes.allSatisfy({ $0 == UInt8(ascii: ".") || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) }) {
            guard parses(host, family: AF_INET) else { throw .invalidIPv4(host) }
            return .ipv4
        }
        try validateHostName(host)
        return .hostName
    }

    private static func validateIPv6(_ host: String) throws(HostPortError) {
        var address = Substring(host)
        if let percent = host.firstIndex(of: "%") {
            let zone = host[host.index(after: percent)...]
            guard !zone.isEmpty, zone.utf8.count <= maxZoneLength,
                zone.utf8.allSatisfy({ isHostNameByte($0) || $0 == UInt8(ascii: ".") })
            else { throw .invalidIPv6(host) }
            address = host[..<percent]
        }
        guard parses(String(address), family: AF_INET6) else { throw .invalidIPv6(host) }
    }

    private static func validateHostName(_ host: String) throws(HostPortError) {
        guard host.utf8.count <= maxHostNameLength else { throw .invalidHostName(host) }
        // A single trailing dot (fully qualified) is allowed; empty labels are not.
        var name = Substring(host)
        if name.hasSuffix(".") { name = name.dropLast() }
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        for label in labels {
            guard !label.isEmpty, label.utf8.count <= maxLabelLength,
                label.utf8.allSatisfy(isHostNameByte),
                !label.hasPrefix("-"), !label.hasSuffix("-")
            else { throw .invalidHostName(host) }
        }
    }

    /// Letters, digits, '-' and '_' (underscore appears in real LAN names even if RFC 952 frowns).
    private static func isHostNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }

    /// inet_pton is the authority on what an address literal is.
    private static func parses(_ text: String, family: Int32) -> Bool {
        var buffer = (UInt64(0), UInt64(0))  // 16 bytes: room for in6_addr
        return withUnsafeMutableBytes(of: &buffer) { inet_pton(family, text, $0.baseAddress) == 1 }
    }
}

/// Why a "HOST:PORT" string was refused.
public enum HostPortError: Error, Equatable, Sendable, CustomStringConvertible {
    case empty
    case tooLong(limit: Int)
    case missingPort(String)
    case missingHost(String)
    case invalidPort(String)
    case portOutOfRange(String)
    case unterminatedBracket(String)
    case unbracketedIPv6(String)
    case invalidIPv6(String)
    case invalidIPv4(String)
    case invalidHostName(String)

    public var description: String {
        switch self {
        case .empty:
            "empty address (expected HOST:PORT)"
        case .tooLong(let limit):
            "address longer than \(limit) characters"
        case .missingPort(let text):
            "missing port in \(TextEscaping.quoted(text)) (expected HOST:PORT, e.g. 0.0.0.0:7744 or [::]:7744)"
        case .missingHost(let text):
            "missing host in \(TextEscaping.quoted(text)) (expected HOST:PORT, e.g. 0.0.0.0:7744 or [::]:7744)"
        case .invalidPort(let text):
            "port \(TextEscaping.quoted(text)) is not a number from 0 to 65535"
        case .portOutOfRange(let text):
            "port \(text) is out of range (0...65535)"
        case .unterminatedBracket(let text):
            "missing ']' in \(TextEscaping.quoted(text))"
        case .unbracketedIPv6(let text):
            "IPv6 addresses must be in brackets, like [::1]:7744 (got \(TextEscaping.quoted(text)))"
        case .invalidIPv6(let host):
            "\(TextEscaping.quoted(host)) is not a valid IPv6 address"
        case .invalidIPv4(let host):
            "\(TextEscaping.quoted(host)) is not a valid IPv4 address"
        case .invalidHostName(let host):
            "\(TextEscaping.quoted(host)) is not a valid host name (letters, digits, '-', '_', dot-separated labels of at most 63)"
        }
    }
}
