/// A point on a monotonic clock, in nanoseconds since an arbitrary origin (boot, or zero in
/// tests). Decisions compare instants and add `Duration`s; they never read a clock
/// themselves: the driver passes `now` in, so a test moves time by hand.
///
/// The wall clock is deliberately not an instant: it jumps (NTP, a person fixing the date)
/// and must never decide a timeout. It is only stamped on stored records.
public struct MonotonicInstant: Comparable, Hashable, Sendable, CustomStringConvertible {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static let zero = MonotonicInstant(nanoseconds: 0)

    public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }

    /// Saturating: an instant never wraps around (a far deadline stays far).
    public static func + (a: Self, d: Duration) -> Self {
        let n = d.wholeNanoseconds
        if n >= 0 {
            let (sum, overflow) = a.nanoseconds.addingReportingOverflow(UInt64(n))
            return Self(nanoseconds: overflow ? .max : sum)
        }
        let back = UInt64(-n)
        return Self(nanoseconds: a.nanoseconds > back ? a.nanoseconds - back : 0)
    }

    /// The time from `b` to `a`; negative when `a` is earlier.
    public static func - (a: Self, b: Self) -> Duration {
        if a >= b { return .nanoseconds(Int64(clamping: a.nanoseconds - b.nanoseconds)) }
        return .nanoseconds(-Int64(clamping: b.nanoseconds - a.nanoseconds))
    }

    public var description: String { "\(nanoseconds)ns" }
}

extension Duration {
    /// Whole nanoseconds, saturating at Int64's range (durations here are timeouts of
    /// seconds to minutes; saturation only guards against nonsense configuration).
    public var wholeNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return ns.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? (seconds < 0 ? .min : .max) : ns + attoseconds / 1_000_000_000
    }

    /// Whole milliseconds (for logs and the random jitter), saturating.
    public var wholeMilliseconds: Int64 { wholeNanoseconds / 1_000_000 }
}
