import ParleyCore

/// Randomness a decision needs (backoff jitter), injected so tests are deterministic.
public protocol RandomSource: Sendable {
    /// A uniformly random integer in `0..<bound`; 0 when `bound` is 0.
    func uniform(below bound: UInt32) -> UInt32
}

/// libsodium's `randombytes_uniform`: the production source.
public struct SodiumRandom: RandomSource {
    public init() {}
    public func uniform(below bound: UInt32) -> UInt32 {
        bound == 0 ? 0 : Sodium.randomUniform(bound)
    }
}
