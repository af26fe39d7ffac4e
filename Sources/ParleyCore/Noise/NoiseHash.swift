import CSodium

/// A Noise hash function (spec §4.3): HASH, HASHLEN, BLOCKLEN and the HMAC built on it.
/// HKDF (spec §4.3) is derived from `hmac` in `SymmetricState`.
public protocol NoiseHash: Sendable {
    /// The name used in the protocol name, e.g. "SHA256" or "BLAKE2b".
    static var name: String { get }
    /// HASHLEN: output length in bytes.
    static var hashLength: Int { get }
    /// BLOCKLEN: the block length HMAC pads the key to.
    static var blockLength: Int { get }
    static func hash(_ data: [UInt8]) -> [UInt8]
    /// HMAC-HASH (RFC 2104) with a key of any length.
    static func hmac(key: [UInt8], data: [UInt8]) -> [UInt8]
}

/// SHA-256 (spec §12.4) through libsodium's `crypto_hash_sha256` and `crypto_auth_hmacsha256`.
public enum NoiseSHA256: NoiseHash {
    public static let name = "SHA256"
    public static let hashLength = Int(crypto_hash_sha256_BYTES)
    public static let blockLength = 64

    public static func hash(_ data: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: hashLength)
        out.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { d in
                _ = crypto_hash_sha256(o.baseAddress!, d.baseAddress, UInt64(d.count))
            }
        }
        return out
    }

    public static func hmac(key: [UInt8], data: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        // The init/update/final form, not crypto_auth_hmacsha256(): that one only takes a
        // 32-byte key, while Noise feeds keys of HASHLEN and more. libsodium hashes keys
        // longer than the block as RFC 2104 requires.
        var state = crypto_auth_hmacsha256_state()
        var out = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        // init() and update() want non-null pointers even for zero lengths, and an empty
        // array may have none: lend them a one-byte buffer with the real length.
        let placeholder: [UInt8] = [0]
        (key.isEmpty ? placeholder : key).withUnsafeBufferPointer { k in
            _ = crypto_auth_hmacsha256_init(&state, k.baseAddress!, key.count)
        }
        (data.isEmpty ? placeholder : data).withUnsafeBufferPointer { d in
            _ = crypto_auth_hmacsha256_update(&state, d.baseAddress!, UInt64(data.count))
        }
        out.withUnsafeMutableBufferPointer { o in
            _ = crypto_auth_hmacsha256_final(&state, o.baseAddress!)
        }
        // The state holds the padded key.
        withUnsafeMutableBytes(of: &state) { sodium_memzero($0.baseAddress!, $0.count) }
        return out
    }
}

/// BLAKE2b with a 64-byte output (spec §12.5) through libsodium's `crypto_generichash`.
///
/// Its HMAC is RFC 2104 over plain BLAKE2b with BLOCKLEN 128, as the spec defines it. BLAKE2b's
/// own keyed mode is a different function and would not interoperate.
public enum NoiseBLAKE2b: NoiseHash {
    public static let name = "BLAKE2b"
    public static let hashLength = Int(crypto_generichash_BYTES_MAX)  // 64
    public static let blockLength = 128

    /// RFC 2104 inner and outer pad bytes.
    private static let innerPad: UInt8 = 0x36
    private static let outerPad: UInt8 = 0x5c

    public static func hash(_ data: [UInt8]) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: hashLength)
        out.withUnsafeMutableBufferPointer { o in
            data.withUnsafeBufferPointer { d in
                _ = crypto_generichash(o.baseAddress!, o.count, d.baseAddress, UInt64(d.count), nil, 0)
            }
        }
        return out
    }

    public static func hmac(key: [UInt8], data: [UInt8]) -> [UInt8] {
        // K' = HASH(K) if K is longer than a block, else K; zero-padded to a block.
        var blockKey = key.count > blockLength ? hash(key) : key
        blockKey += [UInt8](repeating: 0, count: blockLength - blockKey.count)

        var inner = blockKey.map { $0 ^ innerPad } + data
        var innerHash = hash(inner)
        var outer = blockKey.map { $0 ^ outerPad } + innerHash
        let result = hash(outer)

        // Every intermediate is derived from the key: wipe them all.
        Sodium.wipe(&blockKey)
        Sodium.wipe(&inner)
        Sodium.wipe(&innerHash)
        Sodium.wipe(&outer)
        return result
    }
}
