/// The reachability probe of `parley doctor` (record types `0x23` / `0x24`): "please open
/// a TCP connection to me at this port". The peer dials only the host the session comes
/// from (the request carries no host), so it cannot be used to make a node connect to a
/// third party; it connects, closes, and answers with `DialBackResult`.
public struct DialBackRequest: Equatable, Sendable {
    /// Matches the result to the request.
    public let nonce: UInt64
    public let port: UInt16

    public init?(nonce: UInt64, port: UInt16) {
        guard port != 0 else { return nil }
        self.nonce = nonce
        self.port = port
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt64(nonce)
        out.appendUInt16(port)
        return out
    }
}

public struct DialBackResult: Equatable, Sendable {
    public enum Outcome: UInt8, Sendable {
        case connected = 0
        case failed = 1
        /// Not dialled: the peer's rate limit for such requests.
        case refused = 2
    }
    public let nonce: UInt64
    public let outcome: Outcome

    public init(nonce: UInt64, outcome: Outcome) {
        self.nonce = nonce
        self.outcome = outcome
    }

    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.appendUInt64(nonce)
        out.append(outcome.rawValue)
        return out
    }
}
