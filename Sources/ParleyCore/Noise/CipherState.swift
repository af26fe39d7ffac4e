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

    /// EncryptWithAd straight into `out`, which must be `plaintext.count + 16` bytes (a
    /// socket buffer): transport messages are sealed where they will be sent, with no
    /// ciphertext array of their own. Same rules, errors and nonce step as `encrypt`; on an
    /// error nothing is written and the nonce is unchanged.
    public mutating func encrypt(
        ad: [UInt8], plaintext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) throws(NoiseError) {
        guard let key else {
            guard plaintext.count <= NoiseConstants.maxMessageLength else {
                throw .messageTooLong(plaintext.count)
            }
            precondition(out.count == plaintext.count, "output must be as long as the plaintext without a key")
            if plaintext.count > 0 { out.copyMemory(from: plaintext) }
            return
        }
        let length = plaintext.count + NoiseConstants.tagLength
        guard length <= NoiseConstants.maxMessageLength else { throw .messageTooLong(length) }
        guard nonce != NoiseConstants.reservedNonce else { throw .nonceExhausted }
        precondition(out.count == length, "output must be the plaintext plus the 16-byte tag")
        Self.seal(key: key, nonce: nonce, ad: ad, plaintext: plaintext, into: out)
        nonce += 1  // cannot overflow: nonce < UInt64.max was checked above
    }

    /// DecryptWithAd straight into `out`, which must be `ciphertext.count - 16` bytes (the
    /// record stream's buffer). Same rules and errors as `decrypt`; the nonce advances only
    /// when authentication succeeds, and then `out` holds the plaintext (on a failure its
    /// contents mean nothing: the caller drops them).
    public mutating func decrypt(
        ad: [UInt8], ciphertext: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer
    ) throws(NoiseError) {
        guard ciphertext.count <= NoiseConstants.maxMessageLength else {
            throw .messageTooLong(ciphertext.count)
        }
        guard let key else {
            precondition(out.count == ciphertext.count, "output must be as long as the input without a key")
            if ciphertext.count > 0 { out.copyMemory(from: ciphertext) }
            return
        }
        guard ciphertext.count >= NoiseConstants.tagLength else { throw .messageTooShort }
        guard nonce != NoiseConstants.reservedNonce else { throw .nonceExhausted }
        precondition(out.count == ciphertext.count - NoiseConstants.tagLength, "output must be the input less the tag")
        guard Self.open(key: key, nonce: nonce, ad: ad, ciphertext: ciphertext, into: out) else {
            throw .decryptionFailed
        }
        nonce += 1
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
        // Uninitialized: the cipher writes every byte (no zero-fill pass first).
        [UInt8](unsafeUninitializedCapacity: plaintext.count + NoiseConstants.tagLength) { o, initialized in
            plaintext.withUnsafeBytes { p in
                seal(key: key, nonce: nonce, ad: ad, plaintext: p, into: UnsafeMutableRawBufferPointer(o))
            }
            initialized = o.count
        }
    }

    private static func seal(
        key: SecretBytes, nonce: UInt64, ad: [UInt8], plaintext: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) {
        let npub = nonceBytes(nonce)
        ad.withUnsafeBufferPointer { a in
            npub.withUnsafeBufferPointer { np in
                key.withPointer { k in
                    // Cannot fail for inputs below the library's 2^38-byte limit.
                    _ = crypto_aead_chacha20poly1305_ietf_encrypt(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
                        plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                        a.baseAddress, UInt64(a.count), nil, np.baseAddress!, k)
                }
            }
        }
    }

    /// DECRYPT(k, n, ad, ciphertext); nil when authentication fails.
    private static func open(key: SecretBytes, nonce: UInt64, ad: [UInt8], ciphertext: [UInt8]) -> [UInt8]? {
        var ok = false
        let out = [UInt8](unsafeUninitializedCapacity: ciphertext.count - NoiseConstants.tagLength) { o, initialized in
            ciphertext.withUnsafeBytes { c in
                ok = open(key: key, nonce: nonce, ad: ad, ciphertext: c, into: UnsafeMutableRawBufferPointer(o))
            }
            // libsodium writes every byte (the plaintext, or zeros when authentication fails).
            initialized = o.count
        }
        return ok ? out : nil
    }

    private static func open(
        key: SecretBytes, nonce: UInt64, ad: [UInt8], ciphertext: UnsafeRawBufferPointer,
        into out: UnsafeMutableRawBufferPointer
    ) -> Bool {
        let npub = nonceBytes(nonce)
        let rc = ad.withUnsafeBufferPointer { a in
            npub.withUnsafeBufferPointer { np in
                key.withPointer { k in
                    crypto_aead_chacha20poly1305_ietf_decrypt(
                        out.baseAddress?.assumingMemoryBound(to: UInt8.self), nil, nil,
                        ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
                        a.baseAddress, UInt64(a.count), np.baseAddress!, k)
                }
            }
        }
        return rc == 0
    }
}
