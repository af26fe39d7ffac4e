import ParleyCore

/// The fixed keys behind the examples in docs/PROTOCOL.md. Changing them changes the doc.
enum ExampleKeys {
    /// Seed bytes 0x00, 0x01, ..., 0x1f.
    static let aliceIdentity = try! IdentityKeyPair(seed: seed(from: 0x00))  // fixed 32-byte seed
    /// Private key bytes 0x20, ..., 0x3f.
    static let aliceNoise = try! NoiseStaticKeyPair(privateKey: seed(from: 0x20))  // fixed 32 bytes
    /// Seed bytes 0x40, ..., 0x5f.
    static let bobIdentity = try! IdentityKeyPair(seed: seed(from: 0x40))  // fixed 32-byte seed

    static func seed(from first: UInt8) -> SecretBytes {
        var bytes = (0..<32).map { first + UInt8($0) }
        return SecretBytes(consuming: &bytes)
    }

    /// The example card of docs/PROTOCOL.md, "Cards".
    static func aliceCard() throws -> Card {
        try Card.issue(
            identity: aliceIdentity, noiseKey: aliceNoise.publicKey, displayName: "Alice",
            hostName: "alice-laptop.local", issuedAt: 1_767_225_600, sequence: 1,
            expiresAt: 1_798_761_600)
    }
}
