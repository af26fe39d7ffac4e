/// The transport cipher states a finished handshake yields, already oriented for this
/// side: the initiator sends with the first Split output and the responder with the second.
public struct TransportKeys: Sendable {
    public var send: CipherState
    public var receive: CipherState
    /// The final handshake hash `h`: identical on both sides, usable for channel binding.
    public let handshakeHash: [UInt8]
}

/// Where the psk modifier puts the psk token (Noise spec §9).
public enum NoisePresharedKeyPlacement: Sendable {
    /// psk0: nobody without the key learns anything, not even the responder's identity.
    case zero
    /// psk3: the key is checked in the third message only.
    case three
}

/// A Noise HandshakeState (spec §5.3) for exactly one pattern, XX, optionally with the
/// psk0 or psk3 modifier (spec §9), over Curve25519 and ChaCha20-Poly1305. Parley's
/// network key uses psk0 (`SessionHandshake`, PROTOCOL.md); psk3 is kept for its vectors.
///
///     XX:              XXpsk0:               XXpsk3:
///       -> e             -> psk, e             -> e
///       <- e, ee, s, es  <- e, ee, s, es       <- e, ee, s, es
///       -> s, se         -> s, se              -> s, se, psk
///
/// A pure state machine over byte arrays: the caller moves messages and framing.
///
/// Errors. Calls made in the wrong state — out of turn, after completion, with an input or
/// a result over `NoiseConstants.maxMessageLength` — throw and leave the state unchanged.
/// Any other failure of `writeMessage`/`readMessage` (authentication, truncation, a
/// low-order key, a bad pre-shared key) aborts the handshake: from then on every call
/// throws `.handshakeAborted`, and the ephemeral key is dropped.
public struct HandshakeState<H: NoiseHash>: Sendable {
    public enum Role: Sendable { case initiator, responder }

    /// Handshake tokens (spec §7.1, §9).
    private enum Token: Sendable { case e, s, ee, es, se, ss, psk }

    /// XX (spec §7.5). Message i is sent by the initiator when i is even.
    private static var xx: [[Token]] { [[.e], [.e, .ee, .s, .es], [.s, .se]] }
    /// XXpsk3 (spec §9.4): the psk token is appended to the third message.
    private static var xxpsk3: [[Token]] { [[.e], [.e, .ee, .s, .es], [.s, .se, .psk]] }
    /// XXpsk0 (spec §9.4): the psk token starts the first message, so every payload and
    /// static key, the responder's included, is encrypted under a psk-dependent key.
    private static var xxpsk0: [[Token]] { [[.psk, .e], [.e, .ee, .s, .es], [.s, .se]] }

    private enum Phase: Sendable { case running, aborted, split }

    public let role: Role
    public let protocolName: String
    private let messagePatterns: [[Token]]
    private var symmetric: SymmetricState<H>
    private let staticKey: NoiseStaticKeyPair
    private var ephemeralKey: NoiseEphemeralKeyPair?
    private var remoteEphemeralKey: NoisePublicKey?
    public private(set) var remoteStaticKey: NoisePublicKey?
    private let presharedKey: SecretBytes?
    /// Index of the next message to write or read; equals the pattern count when complete.
    private var messageIndex = 0
    private var phase = Phase.running

    /// - Parameters:
    ///   - prologue: data both sides must agree on (spec §6); a mismatch fails the handshake.
    ///   - ephemeralKey: nil generates a fresh key when the `e` token is written. Only test
    ///     vectors should pass a fixed one: reusing an ephemeral key breaks forward secrecy.
    ///   - presharedKey: non-nil selects XXpsk3 (or XXpsk0, see `presharedKeyPlacement`).
    ///     It must be 32 bytes; if it is not, the first `writeMessage`/`readMessage`
    ///     throws `.invalidPresharedKeyLength`.
    public init(
        role: Role, prologue: [UInt8], staticKey: NoiseStaticKeyPair,
        ephemeralKey: NoiseEphemeralKeyPair? = nil,
        presharedKey: SecretBytes? = nil,
        presharedKeyPlacement: NoisePresharedKeyPlacement = .three
    ) {
        let patternName: String
        switch (presharedKey, presharedKeyPlacement) {
        case (nil, _):
            patternName = "XX"
            self.messagePatterns = Self.xx
        case (_, .three):
            patternName = "XXpsk3"
            self.messagePatterns = Self.xxpsk3
        case (_, .zero):
            patternName = "XXpsk0"
            self.messagePatterns = Self.xxpsk0
        }
        self.role = role
        self.protocolName = "Noise_\(patternName)_25519_ChaChaPoly_\(H.name)"
        self.staticKey = staticKey
        self.ephemeralKey = ephemeralKey
        self.presharedKey = presharedKey
        // Spec Initialize: InitializeSymmetric(protocol_name); MixHash(prologue). XX has no
        // pre-message keys to hash.
        symmetric = SymmetricState(protocolName: protocolName)
        symmetric.mixHash(prologue)
    }

    /// True once all three messages have been written or read successfully.
    public var isComplete: Bool { phase != .aborted && messageIndex == messagePatterns.count }

    /// True when the next handshake call should be `writeMessage`. False once complete or aborted.
    public var isMyTurnToWrite: Bool {
        guard phase == .running, messageIndex < messagePatterns.count else { return false }
        return (messageIndex % 2 == 0) == (role == .initiator)
    }

    /// `h` so far; after the last message, the value both sides share.
    public var handshakeHash: [UInt8] { symmetric.handshakeHash }

    // MARK: - Messages

    /// Spec WriteMessage: processes the next message's tokens, then encrypts `payload`.
    /// Returns the message. In plain XX no key exists yet for message 1, so its payload
    /// travels in the clear and unauthenticated (in XXpsk3 it is encrypted under a key
    /// derived from the psk-less chaining key, which is still not secret; only XXpsk0
    /// encrypts it under the psk): put nothing there that must stay confidential.
    public mutating func writeMessage(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        try checkCanProcess(writing: true)
        let length = messageLength(payloadLength: payload.count)
        guard length <= NoiseConstants.maxMessageLength else { throw .messageTooLong(length) }

        // Work on a copy so a failure never leaves a half-processed state behind.
        var next = self
        do throws(NoiseError) {
            let message = try next.processWrite(payload: payload)
            assert(message.count == length, "messageLength(payloadLength:) disagrees with processWrite")
            self = next
            return message
        } catch {
            abort()
            throw error
        }
    }

    /// Spec ReadMessage: processes `message` and returns its decrypted payload.
    public mutating func readMessage(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard message.count <= NoiseConstants.maxMessageLength else { throw .messageTooLong(message.count) }
        try checkCanProcess(writing: false)

        var next = self
        do throws(NoiseError) {
            let payload = try next.processRead(message)
            self = next
            return payload
        } catch {
            abort()
            throw error
        }
    }

    /// Spec Split: the transport cipher states, oriented for this side. Only after the
    /// last message, and only once; afterwards this value holds no key material.
    public mutating func split() throws(NoiseError) -> TransportKeys {
        switch phase {
        case .aborted: throw .handshakeAborted
        case .split: throw .alreadySplit
        case .running: break
        }
        guard isComplete else { throw .handshakeNotComplete }
        let (initiatorToResponder, responderToInitiator) = symmetric.split()
        let keys: TransportKeys
        switch role {
        case .initiator:
            keys = TransportKeys(
                send: initiatorToResponder, receive: responderToInitiator,
                handshakeHash: symmetric.handshakeHash)
        case .responder:
            keys = TransportKeys(
                send: responderToInitiator, receive: initiatorToResponder,
                handshakeHash: symmetric.handshakeHash)
        }
        phase = .split
        symmetric.discardSecrets()
        ephemeralKey = nil
        return keys
    }

    // MARK: - Private

    private var pskMode: Bool { presharedKey != nil }

    /// The errors that leave the state unchanged.
    private func checkCanProcess(writing: Bool) throws(NoiseError) {
        if let presharedKey, presharedKey.count != NoiseConstants.presharedKeyLength {
            throw .invalidPresharedKeyLength(presharedKey.count)
        }
        switch phase {
        case .aborted: throw .handshakeAborted
        case .split: throw .handshakeAlreadyComplete
        case .running: break
        }
        guard messageIndex < messagePatterns.count else { throw .handshakeAlreadyComplete }
        guard isMyTurnToWrite == writing else { throw .wrongTurn }
    }

    private mutating func abort() {
        phase = .aborted
        ephemeralKey = nil
        symmetric.discardSecrets()
    }

    /// The exact length the next message will have with a payload of `payloadLength`
    /// bytes: each `s` and the payload carry a tag once a key exists, and in psk mode the
    /// `e` token already sets a key (spec §9.2).
    private func messageLength(payloadLength: Int) -> Int {
        var hasKey = symmetric.cipher.hasKey
        var length = 0
        for token in messagePatterns[messageIndex] {
            switch token {
            case .e:
                length += NoiseConstants.dhLength
                if pskMode { hasKey = true }
            case .s:
                length += NoiseConstants.dhLength + (hasKey ? NoiseConstants.tagLength : 0)
            case .ee, .es, .se, .ss, .psk:
                hasKey = true
            }
        }
        return length + payloadLength + (hasKey ? NoiseConstants.tagLength : 0)
    }

    private mutating func processWrite(payload: [UInt8]) throws(NoiseError) -> [UInt8] {
        var message: [UInt8] = []
        for token in messagePatterns[messageIndex] {
            switch token {
            case .e:
                let ephemeral = ephemeralKey ?? NoiseEphemeralKeyPair.generate()
                ephemeralKey = ephemeral
                message += ephemeral.publicKey.bytes
                mixEphemeral(ephemeral.publicKey)
            case .s:
                message += try symmetric.encryptAndHash(staticKey.publicKey.bytes)
            case .ee, .es, .se, .ss, .psk:
                try mixSecret(token)
            }
        }
        message += try symmetric.encryptAndHash(payload)
        messageIndex += 1
        return message
    }

    private mutating func processRead(_ message: [UInt8]) throws(NoiseError) -> [UInt8] {
        var offset = 0
        func take(_ count: Int) throws(NoiseError) -> [UInt8] {
            guard message.count - offset >= count else { throw .messageTooShort }
            defer { offset += count }
            return Array(message[offset..<offset + count])
        }

        for token in messagePatterns[messageIndex] {
            switch token {
            case .e:
                // A low-order key is refused by the first DH that uses it (an all-zero
                // result): for the initiator that is `ee` in this same message, for the
                // responder `ee` when it writes message 2, before anything is sent back.
                // An earlier check would cost every honest handshake an extra X25519.
                let remote = try Self.publicKey(try take(NoiseConstants.dhLength))
                remoteEphemeralKey = remote
                mixEphemeral(remote)
            case .s:
                let length = NoiseConstants.dhLength + (symmetric.cipher.hasKey ? NoiseConstants.tagLength : 0)
                remoteStaticKey = try Self.publicKey(try symmetric.decryptAndHash(try take(length)))
            case .ee, .es, .se, .ss, .psk:
                try mixSecret(token)
            }
        }
        let payload = try symmetric.decryptAndHash(try take(message.count - offset))
        messageIndex += 1
        return payload
    }

    /// The `e` token after the key is written or read: MixHash(e.public_key), plus
    /// MixKey(e.public_key) in psk mode (spec §9.2).
    private mutating func mixEphemeral(_ key: NoisePublicKey) {
        symmetric.mixHash(key.bytes)
        if pskMode { symmetric.mixKey(bytes: key.bytes) }
    }

    /// The DH tokens and psk: MixKey(DH(...)) or MixKeyAndHash(psk).
    private mutating func mixSecret(_ token: Token) throws(NoiseError) {
        let initiator = role == .initiator
        let shared: SecretBytes
        switch token {
        case .ee: shared = try Self.dh(ephemeralKey, remoteEphemeralKey)
        case .es:
            shared = initiator ? try Self.dh(ephemeralKey, remoteStaticKey) : try Self.dh(staticKey, remoteEphemeralKey)
        case .se:
            shared = initiator ? try Self.dh(staticKey, remoteEphemeralKey) : try Self.dh(ephemeralKey, remoteStaticKey)
        case .ss: shared = try Self.dh(staticKey, remoteStaticKey)
        case .psk:
            // checkCanProcess guarantees psk mode reaches here with a 32-byte key, and only
            // the psk patterns contain the token.
            guard let presharedKey else { preconditionFailure("psk token outside psk mode") }
            symmetric.mixKeyAndHash(presharedKey)
            return
        case .e, .s:
            preconditionFailure("mixSecret called with a key token")
        }
        symmetric.mixKey(shared)
    }

    /// DH(local, remote), with KeyError mapped into NoiseError.
    private static func dh(_ local: (any DHKeyPair)?, _ remote: NoisePublicKey?) throws(NoiseError) -> SecretBytes {
        // In XX every DH token comes after both keys it uses were written or read (both
        // sides run the same fixed token list), so a missing key is a bug here, not input.
        guard let local, let remote else { preconditionFailure("XX token order guarantees both DH keys exist") }
        do {
            return try local.dh(remote)
        } catch {
            switch error {
            case .lowOrderPoint: throw .lowOrderPoint
            case .wrongLength: throw .invalidPublicKey
            }
        }
    }

    private static func publicKey(_ bytes: [UInt8]) throws(NoiseError) -> NoisePublicKey {
        do {
            return try NoisePublicKey(bytes: bytes)
        } catch {
            throw .invalidPublicKey
        }
    }
}
