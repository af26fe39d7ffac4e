import ParleyCore

/// Typed keys for the store tests' fixtures, which name peers by a repeated byte's hex.
enum StoredKeyFixture {
    static func key(_ hex: String) -> IdentityPublicKey {
        // Force-unwrap safe: fixtures are 64 hex digits by construction.
        try! IdentityPublicKey(bytes: Sodium.fromHex(hex)!)
    }

    static func key(_ byte: UInt8) -> IdentityPublicKey {
        try! IdentityPublicKey(bytes: [UInt8](repeating: byte, count: IdentityPublicKey.length))
    }

    static func noiseKey(_ byte: UInt8) -> NoisePublicKey {
        try! NoisePublicKey(bytes: [UInt8](repeating: byte, count: NoisePublicKey.length))
    }
}
