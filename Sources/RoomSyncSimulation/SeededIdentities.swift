import ParleyCore
import SeededRandom

/// Identity key pairs drawn from a seeded generator: the same seed gives the same room's
/// members in every run, so the simulation's and the resolution bench's figures repeat.
enum SeededIdentities {
    static func make(_ count: Int, using rng: inout SplitMix64) throws -> [IdentityKeyPair] {
        var pairs: [IdentityKeyPair] = []
        pairs.reserveCapacity(count)
        for _ in 0..<count {
            var seedBytes = [UInt8](repeating: 0, count: 32)
            for k in 0..<4 {
                let v = rng.next()
                for b in 0..<8 { seedBytes[k * 8 + b] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(b))) }
            }
            pairs.append(try IdentityKeyPair(seed: SecretBytes(consuming: &seedBytes)))
        }
        return pairs
    }
}
