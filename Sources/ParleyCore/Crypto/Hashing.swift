import CSodium

/// SHA-2 digests from libsodium, for fingerprints and safety numbers.
/// Like every primitive, they come from libsodium only.
extension Sodium {
    /// SHA-256 of the concatenation of `parts` (32 bytes).
    public static func sha256(_ parts: [UInt8]...) -> [UInt8] {
        ensureInitialized()
        var state = crypto_hash_sha256_state()
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256_init(&state)
        for part in parts {
            part.withUnsafeBufferPointer { _ = crypto_hash_sha256_update(&state, $0.baseAddress, UInt64($0.count)) }
        }
        out.withUnsafeMutableBufferPointer { _ = crypto_hash_sha256_final(&state, $0.baseAddress!) }
        return out
    }

    /// SHA-512 of the concatenation of `parts` (64 bytes).
    public static func sha512(_ parts: [UInt8]...) -> [UInt8] {
        ensureInitialized()
        var state = crypto_hash_sha512_state()
        var out = [UInt8](repeating: 0, count: Int(crypto_hash_sha512_BYTES))
        _ = crypto_hash_sha512_init(&state)
        for part in parts {
            part.withUnsafeBufferPointer { _ = crypto_hash_sha512_update(&state, $0.baseAddress, UInt64($0.count)) }
        }
        out.withUnsafeMutableBufferPointer { _ = crypto_hash_sha512_final(&state, $0.baseAddress!) }
        return out
    }
}
