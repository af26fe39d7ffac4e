import ParleyCore
import ParleyNodeCore

/// A clock the test moves by hand: milliseconds of test time for what takes seconds live.
final class ManualNodeClock: NodeClock, @unchecked Sendable {
    private(set) var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    var wall: Int64 = 1_700_000_000_000

    func monotonicNow() -> MonotonicInstant { now }
    func wallMilliseconds() -> Int64 { wall }

    func advance(_ d: Duration) {
        now = now + d
        wall += d.wholeMilliseconds
    }
}

/// Randomness that returns what the test says: the lowest, the highest or a fixed draw.
struct FixedRandom: RandomSource {
    enum Draw { case lowest, highest }
    let draw: Draw
    func uniform(below bound: UInt32) -> UInt32 {
        guard bound > 0 else { return 0 }
        return draw == .lowest ? 0 : bound - 1
    }
}

/// An identity key whose 32 bytes are all `b` (ordering tests need keys in a known order).
func identity(_ b: UInt8) -> IdentityPublicKey {
    try! IdentityPublicKey(bytes: [UInt8](repeating: b, count: IdentityPublicKey.length))
}

func messageID(_ n: UInt8) -> MessageID {
    MessageID(bytes: [UInt8](repeating: n, count: MessageID.length))!
}
