/// How long to wait before dialling a target again after `failures` failed attempts:
/// exponential from `initial`, capped at `maximum`, then jittered to 50-100 % so two nodes
/// that lost each other at the same moment do not redial in lockstep.
public struct RedialBackoff: Sendable, Equatable {
    public var initial: Duration
    public var maximum: Duration
    /// Doublings beyond this add nothing (2^10 x 0.5 s is far past any sane maximum).
    public static let maxDoublings = 10

    public init(initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30)) {
        self.initial = initial
        self.maximum = maximum
    }

    /// The delay before the next attempt.
    public func delay(afterFailures failures: Int, random: some RandomSource) -> Duration {
        let shift = Int64(min(max(failures, 0), Self.maxDoublings))
        let base = initial.wholeNanoseconds.multipliedReportingOverflow(by: Int64(1) << shift)
        let capped = min(base.overflow ? .max : base.partialValue, maximum.wholeNanoseconds)
        let half = capped / 2
        let jitterMs = random.uniform(below: UInt32(clamping: max(half / 1_000_000, 1)))
        return .nanoseconds(half + Int64(jitterMs) * 1_000_000)
    }
}
