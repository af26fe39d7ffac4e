import ParleyCore

/// A throwaway Parley identity for an in-process client: Ed25519 identity, X25519 Noise
/// static key and the signed card binding them. The card is signed once, here, not per
/// handshake (a node signs its card at start and reuses it).
struct BenchIdentity: Sendable {
    let identity: IdentityKeyPair
    let noiseStatic: NoiseStaticKeyPair
    let card: Card

    init(name: String) throws {
        identity = IdentityKeyPair.generate()
        noiseStatic = NoiseStaticKeyPair.generate()
        card = try Card.issue(
            identity: identity, noiseKey: noiseStatic.publicKey, displayName: name,
            hostName: "bench.invalid", issuedAt: BenchIdentity.unixSeconds(), sequence: 1)
    }

    static func unixSeconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(ts.tv_sec)
    }

    /// A new boot id per connection: to the daemon each connection looks like a fresh start
    /// of this client, so it replaces (never refuses) a previous session of the same identity.
    func handshake(role: SessionHandshake.Role) -> SessionHandshake {
        SessionHandshake(
            role: role, localCard: card, staticKey: noiseStatic,
            bootID: Sodium.randomBytes(HandshakePayload.bootIDLength),
            now: BenchIdentity.unixSeconds())
    }
}

#if canImport(Glibc)
    import Glibc
#endif
