/// A small seeded generator (SplitMix64, Steele, Lea and Flood 2014): the same seed gives
/// the same sequence on every machine, so a randomized test's failure reproduces exactly
/// and a benchmark builds the same data in every run. Never for anything secret (keys,
/// nonces, ids on the wire come from libsodium).
///
/// Its own module, used by parley-bench and the test targets (one copy instead of one
/// per target): no product target depends on it.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
