/// The syntax of a `host:port` address in `peers.connect`. Only the shape is checked
/// here; whether the host resolves is the daemon's business (at dial time).
public struct HostPort: Sendable, Hashable, CustomStringConvertible {
    /// Host name or IP literal, without brackets.
    public var host: String
    public var port: Int

    public init?(parsing text: String) {
        guard !text.isEmpty, text.utf8.count <= ControlLimits.maxAddressBytes else { return nil }
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portPart = rest.dropFirst()
            guard hostPart.contains(":") else { return nil }  // brackets are for IPv6 only
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            guard !hostPart.contains(":") else { return nil }  // bare IPv6 needs brackets
        }
        guard !hostPart.isEmpty,
              hostPart.allSatisfy({ $0.isASCII && !$0.isWhitespace && $0 != "/" && $0 != "[" && $0 != "]" }),
              !portPart.isEmpty, portPart.count <= 5, portPart.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = Int(portPart), (1...65535).contains(port) else { return nil }
        self.host = String(hostPart)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
