/// Why a Noise operation failed. Every case is terminal for the session it happened in:
/// the caller should drop the connection (and, for handshakes, start a new one).
public enum NoiseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Authentication failed: the bytes were tampered with, or the peer used other keys
    /// (wrong prologue, wrong pre-shared key, an impostor).
    case decryptionFailed
    /// The cipher reached the reserved nonce 2^64-1; rekeying does not reset it, only a
    /// new session does.
    case nonceExhausted
    /// A message of this many bytes would exceed `NoiseConstants.maxMessageLength`.
    case messageTooLong(Int)
    /// A message ended before all the fields its handshake step requires.
    case messageTooShort
    /// `split()` was called before the last handshake message was processed.
    case handshakeNotComplete
    /// A handshake message was written or read after the handshake finished.
    case handshakeAlreadyComplete
    /// `writeMessage` when it is the peer's turn to send, or `readMessage` when it is ours.
    case wrongTurn
    /// A Diffie-Hellman result was all zeros: the peer sent a low-order public key.
    case lowOrderPoint
    /// A public key had the wrong form.
    case invalidPublicKey
    /// An earlier `writeMessage`/`readMessage` on this handshake failed, so it is unusable.
    case handshakeAborted
    /// `split()` was already called; the transport keys are handed out only once so the
    /// same key and nonce can never be used by two cipher states.
    case alreadySplit
    /// The pre-shared key given to the handshake is not 32 bytes long (it had this many).
    case invalidPresharedKeyLength(Int)

    public var description: String {
        switch self {
        case .decryptionFailed:
            return
                "Noise decryption failed: the message was altered or the peer uses different keys, prologue or pre-shared key"
        case .nonceExhausted:
            return "Noise cipher nonce exhausted (2^64-1 messages): start a new session"
        case let .messageTooLong(n):
            return
                "Noise message of \(n) bytes exceeds the \(NoiseConstants.maxMessageLength)-byte limit: send a smaller payload"
        case .messageTooShort:
            return "Noise message is truncated: it is shorter than its handshake step requires"
        case .handshakeNotComplete:
            return "Noise handshake is not complete yet: exchange all three messages before split()"
        case .handshakeAlreadyComplete:
            return "Noise handshake is already complete: use the transport keys from split()"
        case .wrongTurn:
            return "Noise handshake called out of turn: write and read must alternate, initiator first"
        case .lowOrderPoint:
            return "Noise handshake failed: the peer sent a low-order public key (all-zero Diffie-Hellman result)"
        case .invalidPublicKey:
            return "Noise handshake failed: the peer sent a malformed public key"
        case .handshakeAborted:
            return "Noise handshake already failed earlier: start a new handshake"
        case .alreadySplit:
            return "Noise handshake was already split into transport keys: split() hands them out only once"
        case let .invalidPresharedKeyLength(n):
            return "Noise pre-shared key must be \(NoiseConstants.presharedKeyLength) bytes, got \(n)"
        }
    }
}
