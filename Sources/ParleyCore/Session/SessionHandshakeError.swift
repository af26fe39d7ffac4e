/// Why a handshake with a peer failed. Each case is something the log can name.
public enum SessionHandshakeError: Error, Equatable, Sendable, CustomStringConvertible {
    case noise(NoiseError)
    case malformedPayload(String)
    case invalidCard(CardError)
    /// The card verifies, but names a Noise key other than the one the handshake proved:
    /// someone is presenting another node's card.
    case cardKeyMismatch
    case cardExpired
    /// We reached ourselves (mDNS shows our own advertisement, or a loop).
    case connectedToSelf
    case unexpectedMessage
    case timedOut

    public var description: String {
        switch self {
        case .noise(let e): return "Noise handshake failed: \(e)"
        case .malformedPayload(let s): return "malformed handshake payload: \(s)"
        case .invalidCard(let e): return "invalid card: \(e)"
        case .cardKeyMismatch: return "card's Noise key differs from the key proven in the handshake"
        case .cardExpired: return "card has expired"
        case .connectedToSelf: return "connected to ourselves"
        case .unexpectedMessage: return "unexpected handshake message"
        case .timedOut: return "handshake did not finish in time"
        }
    }
}
