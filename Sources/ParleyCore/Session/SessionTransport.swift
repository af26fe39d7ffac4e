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

    /// Seals one chunk straight into `out` (`plaintext.count + 16` bytes: where the message
    /// will be sent from), with no ciphertext array of its own.
    public mutating func seal(_ plaintext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer)
        throws(NoiseError)
    {
        try sender.encrypt(ad: [], plaintext: plaintext, into: out)
        messagesSent &+= 1
        if messagesSent % WireLimits.rekeyEveryMessages == 0 { sender.rekey() }
    }

    /// Opens one transport message straight into the record stream's buffer (no plaintext
    /// array, no second copy). A failure leaves `decoder` as it was, and means tampering,
    /// replay or reordering: the caller must close the session.
    public mutating func open(_ message: UnsafeRawBufferPointer, into decoder: inout RecordStreamDecoder)
        throws(NoiseError)
    {
        guard message.count <= NoiseConstants.maxMessageLength else { throw .messageTooLong(message.count) }
        guard message.count >= NoiseConstants.tagLength else { throw .messageTooShort }
        try decoder.append(count: message.count - NoiseConstants.tagLength) {
            out throws(NoiseError) in
            try receiver.decrypt(ad: [], ciphertext: message, into: out)
        }
        messagesReceived &+= 1
        if messagesReceived % WireLimits.rekeyEveryMessages == 0 { receiver.rekey() }
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
