/// The protocol's version string.
public enum ProtocolVersion {
    /// Used as the Noise prologue. Both sides mix it into the handshake hash, so two nodes
    /// speaking different protocol versions (or different Noise suites) fail the handshake
    /// cleanly at the first authenticated message instead of misparsing each other later.
    public static let prologue: [UInt8] = Array("parley/1 Noise_XX_25519_ChaChaPoly_SHA256".utf8)
}
