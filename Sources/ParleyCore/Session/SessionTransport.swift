/// The two CipherStates of an established session plus the rekey schedule.
///
/// Both directions rekey (Noise `Rekey()`) after every `WireLimits.rekeyEveryMessages`
/// messages. The count is implicit in the nonce, so both ends rekey at the same
/// message without a signal.
public struct SessionTransport: Sendable {
    private var sender: CipherState
    private var receiver: CipherState
    public private(set) var messagesSent: UInt64 = 0
    public private(set) var messagesReceived: UInt64 = 0

    public init(keys: TransportKeys) {
        self.sender = keys.send
        self.receiver = keys.receive
    }

    /// Encrypts one chunk of at most `WireLimits.maxPlaintextPerMessage` bytes.
    public mutating func seal(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let out = try sender.encrypt(ad: [], plaintext: plaintext)
        messagesSent &+= 1
        if messagesSent % WireLimits.rekeyEveryMessages == 0 { sender.rekey() }
        return out
    }

    /// Decrypts one transport message. A failure means tampering, replay or
    /// reordering: the caller must close the session.
    public mutating func open(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        let out = try receiver.decrypt(ad: [], ciphertext: message)
        messagesReceived &+= 1
        if messagesReceived % WireLimits.rekeyEveryMessages == 0 { receiver.rekey() }
        return out
    }
}
