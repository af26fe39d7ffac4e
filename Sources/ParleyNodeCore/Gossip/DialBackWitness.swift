import ParleyCore

/// Which connected peer `parley doctor` asks to dial our port back (docs/PROTOCOL.md,
/// dialBackRequest). Its answer becomes advice ("open the port in the firewall"), so it must
/// come from someone the person trusts: any stranger on the LAN can connect and answer
/// "failed" without dialling (issue 29, L1). Only peers the person verified are asked;
/// with none connected the probe is not made (doctor says so).
public enum DialBackWitness {
    public struct Candidate: Sendable, Equatable {
        public var identity: IdentityPublicKey
        /// The person verified this key (compared fingerprints out of band).
        public var verified: Bool
        /// Its session announced the feature the probe needs (address gossip).
        public var understandsProbe: Bool

        public init(identity: IdentityPublicKey, verified: Bool, understandsProbe: Bool) {
            self.identity = identity
            self.verified = verified
            self.understandsProbe = understandsProbe
        }
    }

    /// The peer to ask: the first (by key bytes, so the choice is stable) verified peer
    /// whose session understands the probe; nil if there is none.
    public static func choose(_ candidates: [Candidate]) -> IdentityPublicKey? {
        candidates.filter { $0.verified && $0.understandsProbe }
            .map(\.identity)
            .min { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }
}
