/// A Noise SymmetricState (spec §5.2): the chaining key `ck`, the handshake hash `h`, and
/// the CipherState that handshake fields are encrypted with.
///
/// Internal: only `HandshakeState` drives it, in the order the handshake pattern dictates.
struct SymmetricState<H: NoiseHash>: Sendable {
    /// `ck`: secret, it is what the transport keys are derived from.
    private var chainingKey: SecretBytes
    /// `h`: public (both sides know it), binds everything sent so far.
    private(set) var handshakeHash: [UInt8]
    private(set) var cipher = CipherState()

    /// Spec InitializeSymmetric: h = protocol name zero-padded to HASHLEN, or its hash if
    /// longer; ck = h; no cipher key.
    init(protocolName: String) {
        let name = Array(protocolName.utf8)
        if name.count <= H.hashLength {
            handshakeHash = name + [UInt8](repeating: 0, count: H.hashLength - name.count)
        } else {
            handshakeHash = H.hash(name)
        }
        let initial = handshakeHash
        chainingKey = SecretBytes(count: initial.count) { dst in
            for i in initial.indices { dst[i] = initial[i] }
        }
    }

    /// Spec MixKey for a secret input (DH outputs).
    mutating func mixKey(_ inputKeyMaterial: SecretBytes) {
        var ikm = inputKeyMaterial.copyBytes()
        mixKey(bytes: ikm)
        Sodium.wipe(&ikm)
    }

    /// Spec MixKey: ck, temp_k = HKDF(ck, ikm, 2); k = temp_k truncated to 32 bytes; n = 0.
    mutating func mixKey(bytes inputKeyMaterial: [UInt8]) {
        var outputs = hkdf(inputKeyMaterial, outputs: 2)
        chainingKey = SecretBytes(consuming: &outputs[0])
        cipher = CipherState(key: Self.cipherKey(consuming: &outputs[1]))
    }

    /// Spec MixHash: h = HASH(h || data).
    mutating func mixHash(_ data: [UInt8]) {
        handshakeHash = H.hash(handshakeHash + data)
    }

    /// Spec MixKeyAndHash (used for the psk token): ck, temp_h, temp_k = HKDF(ck, ikm, 3);
    /// MixHash(temp_h); k = temp_k truncated to 32 bytes.
    mutating func mixKeyAndHash(_ inputKeyMaterial: SecretBytes) {
        var ikm = inputKeyMaterial.copyBytes()
        var outputs = hkdf(ikm, outputs: 3)
        Sodium.wipe(&ikm)
        chainingKey = SecretBytes(consuming: &outputs[0])
        mixHash(outputs[1])
        Sodium.wipe(&outputs[1])
        cipher = CipherState(key: Self.cipherKey(consuming: &outputs[2]))
    }

    /// Spec EncryptAndHash: ciphertext = EncryptWithAd(h, plaintext); MixHash(ciphertext).
    mutating func encryptAndHash(_ plaintext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let ciphertext = try cipher.encrypt(ad: handshakeHash, plaintext: plaintext)
        mixHash(ciphertext)
        return ciphertext
    }

    /// Spec DecryptAndHash: plaintext = DecryptWithAd(h, ciphertext); MixHash(ciphertext).
    mutating func decryptAndHash(_ ciphertext: [UInt8]) throws(NoiseError) -> [UInt8] {
        let plaintext = try cipher.decrypt(ad: handshakeHash, ciphertext: ciphertext)
        mixHash(ciphertext)
        return plaintext
    }

    /// Spec Split: temp_k1, temp_k2 = HKDF(ck, zerolen, 2); two cipher states keyed with
    /// them (truncated to 32 bytes). The first is the initiator's sending direction.
    func split() -> (CipherState, CipherState) {
        var outputs = hkdf([], outputs: 2)
        let first = CipherState(key: Self.cipherKey(consuming: &outputs[0]))
        let second = CipherState(key: Self.cipherKey(consuming: &outputs[1]))
        return (first, second)
    }

    /// Drops the chaining key and the handshake cipher once the transport keys exist, so
    /// this value no longer holds anything they could be re-derived from.
    mutating func discardSecrets() {
        chainingKey = SecretBytes(count: 0) { _ in }
        cipher = CipherState()
    }

    // MARK: - HKDF

    /// Spec HKDF(chaining_key, input_key_material, num_outputs) with num_outputs 2 or 3:
    /// temp_key = HMAC(ck, ikm); output1 = HMAC(temp_key, 0x01);
    /// output_i = HMAC(temp_key, output_{i-1} || i). Each output is HASHLEN bytes; the
    /// caller wipes them.
    private func hkdf(_ inputKeyMaterial: [UInt8], outputs count: Int) -> [[UInt8]] {
        var ck = chainingKey.copyBytes()
        var tempKey = H.hmac(key: ck, data: inputKeyMaterial)
        Sodium.wipe(&ck)
        var outputs: [[UInt8]] = []
        outputs.reserveCapacity(count)
        for i in 1...count {
            var input = (outputs.last ?? []) + [UInt8(i)]
            outputs.append(H.hmac(key: tempKey, data: input))
            Sodium.wipe(&input)
        }
        Sodium.wipe(&tempKey)
        return outputs
    }

    /// The first 32 bytes of a HASHLEN output as a cipher key (spec: truncate when HASHLEN
    /// is 64); wipes the whole output.
    private static func cipherKey(consuming bytes: inout [UInt8]) -> SecretBytes {
        let key = SecretBytes(count: NoiseConstants.keyLength) { dst in
            for i in 0..<NoiseConstants.keyLength { dst[i] = bytes[i] }
        }
        Sodium.wipe(&bytes)
        return key
    }
}
