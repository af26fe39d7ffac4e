import ParleyCore

/// The node's two long-term private keys, as loaded from the state directory.
public struct NodeKeys: Sendable {
    /// Ed25519: who this node is (its fingerprint); signs cards.
    public let identity: IdentityKeyPair
    /// X25519: the Noise `s` key; rotatable, vouched for by a card.
    public let noiseStatic: NoiseStaticKeyPair

    public init(identity: IdentityKeyPair, noiseStatic: NoiseStaticKeyPair) {
        self.identity = identity
        self.noiseStatic = noiseStatic
    }
}
