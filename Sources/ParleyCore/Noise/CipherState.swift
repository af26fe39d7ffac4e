import CSodium

/// A Noise CipherState (spec §5.1): a ChaCha20-Poly1305 key `k` and a 64-bit counter `n`.
///
/// During the handshake it encrypts handshake fields; after `split()` one CipherState per
/// direction encrypts transport messages. The nonce is 4 zero bytes followed by `n` in
/// little-endian (spec §12.3, IETF ChaCha20-Poly1305 with a 96-bit nonce).
public struct CipherState: Sendable {
    /// Nil until a key is set: then encryption is the identity (spec: "if k is empty").
    private var key: SecretBytes?
    public private(set) var nonce: UInt64 = 0

    /// A cipher state with no key: `encrypt`/`decrypt` pass data through unchanged.
    public init() {}

    /// A cipher state with a 32-byte key and nonce 0.
    ///
    /// Keys come from HKDF inside this module or from tests, never from the wire, so a
    /// wrong length is a programming error and traps.
    public init(key: SecretBytes) {
        precondition(
            key.count == NoiseConstants.keyLength,
            "CipherState key must be \(NoiseConstants.keyLength) bytes, got \(key.count)")
        self.key = key
    }

    public var hasKey: Bool { key != nil }

    /// Spec SetNonce. For tests and for callers that track the counter themselves.
    public mutating func setNonce(_ n: UInt64) { nonce = n }

    /// Spec EncryptWithAd. Without a key, returns the plaintext and leaves the nonce alone.
    /// Throws `.nonceExhausted` at nonce 2^64-1 and `.messageTooLong` if the result would
    /// exceed `NoiseConstants.maxMessageLength`.
    public mutating func encrypt(ad: [UInt8], plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard let key else {
            guard plaintext.count <= NoiseConstants.maxMessageLength else {
                throw .messageTooLong(plaintext.count)
            }
            return plaintext
        }
        let length = plaintext.count + NoiseConstants.tagLength
        guard length <= NoiseConstants.maxMessageLength else { throw .messageTooLong(length) }
        guard nonce != NoiseConstants.reservedNonce else { throw .nonceExhausted }
        let ciphertext = Self.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext)
        nonce += 1  // cannot overflow: nonce < UInt64.max was checked above
        return ciphertext
    }

    /// Spec DecryptWithAd. Without a key, returns the input. The nonce advances only when
    /// authentication succeeds, so a forged message does not desynchronise the peers.
    public mutating func decrypt(ad: [UInt8], ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        guard ciphertext.count <= NoiseConstants.maxMessageLength else {
            throw .messageTooLong(ciphertext.count)
        }
        guard let key else { return ciphertext }
        guard ciphertext.count >= NoiseConstants.tagLength else { throw .messageTooShort }
        guard nonce != NoiseConstants.reservedNonce else { throw .nonceExhausted }
        guard let plaintext = Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext) else {
            throw .decryptionFailed
        }
        nonce += 1
        return plaintext
    }

    /// Spec Rekey: k = REKEY(k), the first 32 bytes of ENCRYPT(k, 2^64-1, zerolen, zeros[32])
    /// (spec §4.2 default). The nonce is kept, as the spec says. No-op without a key.
    public mutating func rekey() {
        guard let key else { return }
        var block = Self.seal(
            key: key, nonce: NoiseConstants.reservedNonce, ad: [],
            plaintext: [UInt8](repeating: 0, count: NoiseConstants.keyLength))
        self.key = SecretBytes(count: NoiseConstants.keyLength) { dst in
            for i in 0..<NoiseConstants.keyLength { dst[i] = block[i] }
        }
        Sodium.wipe(&block)
    }

    // MARK: - AEAD

    /// 96-bit IETF nonce: 32 zero bits, then the counter little-endian (spec §12.3).
    static func nonceBytes(_ n: UInt64) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(crypto_aead_chacha20poly1305_ietf_NPUBBYTES))
        for i in 0..<8 { out[4 + i] = UInt8(truncatingIfNeeded: n >> (8 * UInt64(i))) }
        return out
    }

    /// ENCRYPT(k, n, ad, plaintext) for any nonce, including the reserved one REKEY uses.
    private static func seal(key: SecretBytes, nonce: UInt64, ad: [UInt8], plaintext: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: plaintext.count + NoiseConstants.tagLength)
        let npub = nonceBytes(nonce)
        out.withUnsafeMutableBufferPointer { o in
            plaintext.withUnsafeBufferPointer { p in
                ad.withUnsafeBufferPointer { a in
                    npub.withUnsafeBufferPointer { np in
                        key.withPointer { k in
                            // Cannot fail for inputs below the library's 2^38-byte limit.
                            _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                                o.baseAddress!, nil, p.baseAddress, UInt64(p.count),
                                a.baseAddress, UInt64(a.count), nil, np.baseAddress!, k)
                        }
                    }
                }
            }
        }
        return out
    }

    /// DECRYPT(k, n, ad, ciphertext); nil when authentication fails.
    private static func open(key: SecretBytes, nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: ciphertext.count - NoiseConstants.tagLength)
        let npub = nonceBytes(nonce)
        let rc = out.withUnsafeMutableBufferPointer { o in
            ciphertext.withUnsafeBufferPointer { c in
                ad.withUnsafeBufferPointer { a in
                    npub.withUnsafeBufferPointer { np in
                        key.withPointer { k in
                            crypto_aead_chacha20poly1305_ietf_decrypt(
                                o.baseAddress, nil, nil, c.baseAddress!, UInt64(c.count),
                                a.baseAddress, UInt64(a.count), np.baseAddress!, k)
                        }
                    }
                }
            }
        }
        return rc == 0 ? out : nil
    }
}
