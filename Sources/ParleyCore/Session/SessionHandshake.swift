/// Parley's handshake: Noise XX with each side's signed card in its encrypted payload.
///
///     -> e                      (message 1, empty payload)
///     <- e, ee, s, es           (message 2, payload: responder's card + boot id)
///     -> s, se                  (message 3, payload: initiator's card + boot id)
///
/// Each side accepts the other only if the card's signature verifies and the card's
/// Noise key equals the static key the handshake proved. A pure state machine over
/// byte arrays: sockets, timers and trust decisions live elsewhere.
public struct SessionHandshake {
    public enum Role: Sendable { case initiator, responder }

    /// The result of a completed handshake.
    public struct Established: Sendable {
        public let role: Role
        public let remoteCard: Card
        public let remoteBootID: [UInt8]
        /// What the peer announced it understands (`ProtocolFeatures`).
        public let remoteFeatures: ProtocolFeatures
        public let handshakeHash: [UInt8]
        public var transport: SessionTransport
    }

    public enum Step {
        /// Send these bytes (one Noise handshake message) and wait for the next.
        case send([UInt8])
        /// Done: send the final message if any, then switch to transport.
        case established(finalMessage: [UInt8]?, Established)
    }

    public let role: Role
    private var noise: HandshakeState<NoiseSHA256>
    private let localPayload: [UInt8]
    private let localIdentity: IdentityPublicKey
    private let now: UInt64
    private var failed = false

    /// - Parameters:
    ///   - localCard: our signed card (its Noise key must be `staticKey`'s public key).
    ///   - bootID: `HandshakePayload.bootIDLength` random bytes chosen at daemon start.
    ///   - presharedKey: the optional network key: makes the pattern XXpsk0, so a node
    ///     without it learns nobody's identity, not even the responder's.
    ///   - now: unix seconds, to check the peer card's expiry.
    public init(
        role: Role, localCard: Card, staticKey: NoiseStaticKeyPair, bootID: [UInt8],
        features: ProtocolFeatures = [], presharedKey: SecretBytes? = nil, now: UInt64,
        prologue: [UInt8] = ProtocolVersion.prologue,
        ephemeralKey: NoiseEphemeralKeyPair? = nil
    ) {
        self.role = role
        self.noise = HandshakeState<NoiseSHA256>(
            role: role == .initiator ? .initiator : .responder,
            prologue: prologue, staticKey: staticKey, ephemeralKey: ephemeralKey,
            presharedKey: presharedKey, presharedKeyPlacement: .zero)
        self.localPayload = HandshakePayload(card: localCard.encoded(), bootID: bootID, features: features).encoded()
        self.localIdentity = localCard.identityKey
        self.now = now
    }

    /// The initiator's first message. Responders call `receive` first instead.
    public mutating func start() throws(SessionHandshakeError) -> [UInt8] {
        guard role == .initiator, !failed else { throw .unexpectedMessage }
        return try guarded { (hs: inout HandshakeState<NoiseSHA256>) throws(NoiseError) in
            try hs.writeMessage(payload: [])
        }
    }

    /// Feeds one handshake message from the peer.
    public mutating func receive(_ message: [UInt8]) throws(SessionHandshakeError) -> Step {
        guard !failed, !noise.isComplete, !noise.isMyTurnToWrite else {
            // A peer that sends out of turn is not following the protocol: nothing it
            // sends later on this connection can be trusted either.
            failed = true
            throw .unexpectedMessage
        }
        do throws(SessionHandshakeError) {
            return try step(message)
        } catch {
            failed = true
            throw error
        }
    }

    private mutating func step(_ message: [UInt8]) throws(SessionHandshakeError) -> Step {
        let payload = try readNoise(message)
        switch (role, noise.isComplete) {
        case (.responder, false):
            // After message 1: its payload is plaintext; v1 sends none and ignores any.
            return .send(try writeNoise(localPayload))
        case (.initiator, false):
            // After message 2: verify the responder, then send message 3.
            let remote = try verify(payload)
            let final = try writeNoise(localPayload)
            return .established(finalMessage: final, try finish(remote))
        case (.responder, true):
            return .established(finalMessage: nil, try finish(try verify(payload)))
        case (.initiator, true):
            throw .unexpectedMessage
        }
    }

    private mutating func readNoise(_ m: [UInt8]) throws(SessionHandshakeError) -> [UInt8] {
        do { return try noise.readMessage(m) } catch { throw .noise(error) }
    }

    private mutating func writeNoise(_ p: [UInt8]) throws(SessionHandshakeError) -> [UInt8] {
        do { return try noise.writeMessage(payload: p) } catch { throw .noise(error) }
    }

    private mutating func guarded<T>(_ body: (inout HandshakeState<NoiseSHA256>) throws(NoiseError) -> T)
        throws(SessionHandshakeError) -> T
    {
        do { return try body(&noise) } catch {
            failed = true
            throw .noise(error)
        }
    }

    private func verify(_ payloadBytes: [UInt8]) throws(SessionHandshakeError) -> (Card, [UInt8], ProtocolFeatures) {
        let payload = try HandshakePayload.decode(payloadBytes)
        let card: Card
        do { card = try Card.decode(payload.card) } catch { throw .invalidCard(error) }
        guard let proven = noise.remoteStaticKey, proven == card.noiseKey else { throw .cardKeyMismatch }
        guard !card.isExpired(now: now) else { throw .cardExpired }
        guard card.identityKey != localIdentity else { throw .connectedToSelf }
        return (card, payload.bootID, payload.features)
    }

    private mutating func finish(_ remote: (Card, [UInt8], ProtocolFeatures)) throws(SessionHandshakeError)
        -> Established
    {
        let keys: TransportKeys
        do { keys = try noise.split() } catch { throw .noise(error) }
        return Established(
            role: role, remoteCard: remote.0, remoteBootID: remote.1, remoteFeatures: remote.2,
            handshakeHash: keys.handshakeHash,
            transport: SessionTransport(keys: keys))
    }
}
