import ParleyCore

/// Fixed keys, cards and ephemerals for the handshake fuzz target and its seeds.
///
/// Everything is deterministic so that a seed recorded by MakeSeeds (a real message 3
/// from this initiator to this responder) is still valid when the fuzz target replays
/// it: a random ephemeral on either side would make every recorded message 3 fail
/// decryption, and the fuzzer could never reach the payload and card checks behind it.
/// Fixed ephemerals are a test-only shortcut; the daemon always generates fresh ones.
public enum FuzzFixtures {
    /// Unix seconds: inside both cards' validity (issued 2026-01-01, expire 2027-01-01).
    public static let now: UInt64 = 1_770_000_000
    static let issuedAt: UInt64 = 1_767_225_600
    static let expiresAt: UInt64 = 1_798_761_600

    public static let responderBootID = [UInt8](repeating: 0xB0, count: HandshakePayload.bootIDLength)
    public static let initiatorBootID = [UInt8](repeating: 0xA0, count: HandshakePayload.bootIDLength)

    public struct Party: Sendable {
        public let identity: IdentityKeyPair
        public let staticKey: NoiseStaticKeyPair
        public let card: Card
        let ephemeralSeed: UInt8
        public let bootID: [UInt8]

        /// A new key pair object each call (same key), so no two handshakes share one.
        public func ephemeralKey() -> NoiseEphemeralKeyPair {
            // Force-try safe: 32 bytes is the only length X25519 private keys need.
            try! NoiseEphemeralKeyPair(privateKey: FuzzFixtures.secret(from: ephemeralSeed))
        }
    }

    public static let responder = party(
        seed: 0x00, name: "Rita", host: "rita-desktop.local",
        bootID: responderBootID)
    public static let initiator = party(
        seed: 0x80, name: "Ian", host: "ian-laptop.local",
        bootID: initiatorBootID)

    /// The responder the fuzz target attacks.
    public static func responderHandshake() -> SessionHandshake {
        SessionHandshake(
            role: .responder, localCard: responder.card, staticKey: responder.staticKey,
            bootID: responder.bootID, now: now, ephemeralKey: responder.ephemeralKey())
    }

    /// An honest initiator, to produce real messages 1 and 3.
    public static func initiatorHandshake() -> SessionHandshake {
        SessionHandshake(
            role: .initiator, localCard: initiator.card, staticKey: initiator.staticKey,
            bootID: initiator.bootID, now: now, ephemeralKey: initiator.ephemeralKey())
    }

    /// The initiator's raw Noise state, for sending a message 3 with an arbitrary payload.
    public static func initiatorNoise() -> HandshakeState<NoiseSHA256> {
        HandshakeState<NoiseSHA256>(
            role: .initiator, prologue: ProtocolVersion.prologue,
            staticKey: initiator.staticKey, ephemeralKey: initiator.ephemeralKey(),
            presharedKey: nil)
    }

    static func party(seed: UInt8, name: String, host: String, bootID: [UInt8]) -> Party {
        // Force-tries safe: fixed 32-byte keys and a card whose fields follow the rules;
        // a failure here is a bug in these constants, found on the first run.
        let identity = try! IdentityKeyPair(seed: secret(from: seed))
        let staticKey = try! NoiseStaticKeyPair(privateKey: secret(from: seed &+ 0x20))
        let card = try! Card.issue(
            identity: identity, noiseKey: staticKey.publicKey, displayName: name,
            hostName: host, issuedAt: issuedAt, sequence: 1, expiresAt: expiresAt)
        return Party(
            identity: identity, staticKey: staticKey, card: card,
            ephemeralSeed: seed &+ 0x40, bootID: bootID)
    }

    static func secret(from first: UInt8) -> SecretBytes {
        var bytes = (0..<32).map { first &+ UInt8($0) }
        return SecretBytes(consuming: &bytes)
    }
}
