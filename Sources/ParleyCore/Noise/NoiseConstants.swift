/// Sizes the Noise spec (revision 34) fixes for `25519_ChaChaPoly`, and the limits Parley
/// enforces because of them.
public enum NoiseConstants {
    /// Spec §3: every Noise message, handshake or transport, is at most 65535 bytes so it
    /// always fits a 16-bit length prefix. Longer messages are refused both when written
    /// (the result) and when read (the input), so a peer cannot make us buffer more.
    public static let maxMessageLength = 65535
    /// ChaCha20-Poly1305 authentication tag (spec §5: ENCRYPT adds 16 bytes).
    public static let tagLength = 16
    /// DHLEN for Curve25519 (spec §12.1): public keys and DH outputs are 32 bytes.
    public static let dhLength = 32
    /// Cipher key length (spec §5: `k` is 32 bytes; hash outputs are truncated to it).
    public static let keyLength = 32
    /// Spec §9: a pre-shared key is exactly 32 bytes.
    public static let presharedKeyLength = 32
    /// The largest plaintext one transport message can carry.
    public static let maxPlaintextLength = maxMessageLength - tagLength
    /// Spec §5.1: nonce 2^64-1 is reserved (REKEY uses it); encrypting or decrypting with
    /// it is an error, so a cipher that reaches it is used up.
    public static let reservedNonce = UInt64.max
}
