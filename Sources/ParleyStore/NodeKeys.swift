import ParleyCore

/// The node's two long-term private keys, as loaded from the state directory.
public struct NodeKeys: Sendable {
    /// Ed25519: who this node is (its fingerprint); signs cards.
    public let identity: IdentityKeyPair
    /// X25519: the Noise `s` key; rotatable, vouched for by a card.
    public let noiseStatic: NoiseStaticKeyPair
    /// `identity.publicKey.hex`, converted once: the store boundary still takes identities
    /// as hex, and converting on every use was two conversions per message (callgrind).
    public let identityHex: String

    public init(identity: IdentityKeyPair, noiseStatic: NoiseStaticKeyPair) {
        self.identity = identity
        self.noiseStatic = noiseStatic
        self.identityHex = identity.publicKey.hex
    }
}
