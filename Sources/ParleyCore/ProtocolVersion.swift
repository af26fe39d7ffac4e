/// The protocol's version string.
public enum ProtocolVersion {
    /// The protocol's name and version, as `parley --version` and `parleyd --version` print it
    /// after the package version, and as the prologue starts.
    public static let name = "parley/1"

    /// Used as the Noise prologue. Both sides mix it into the handshake hash, so two nodes
    /// speaking different protocol versions (or different Noise suites) fail the handshake
    /// cleanly at the first authenticated message instead of misparsing each other later.
    public static let prologue: [UInt8] = Array("\(name) Noise_XX_25519_ChaChaPoly_SHA256".utf8)
}

extension ProtocolVersion {
    /// `--version`'s text: the package version (``ParleyVersion``'s string, passed in so this
    /// module needs no dependency on the control protocol's) and the protocol it speaks,
    /// e.g. "0.1.0 (protocol parley/1)". An admin comparing hosts sees both at once.
    public static func versionText(package: String) -> String {
        "\(package) (protocol \(name))"
    }
}
