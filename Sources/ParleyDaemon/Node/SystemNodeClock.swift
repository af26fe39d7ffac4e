import NIOCore
import ParleyNodeCore

#if canImport(Glibc)
    import Glibc
#endif

/// The real clocks: NIO's monotonic deadline (CLOCK_MONOTONIC, the clock NIO's timers
/// use, so an instant converts to a `NIODeadline` exactly) and CLOCK_REALTIME.
struct SystemNodeClock: NodeClock {
    func monotonicNow() -> MonotonicInstant { MonotonicInstant(nanoseconds: NIODeadline.now().uptimeNanoseconds) }

    func wallMilliseconds() -> Int64 { Self.wallMilliseconds() }

    static func wallMilliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

extension MonotonicInstant {
    /// The same instant as a NIO deadline (both count CLOCK_MONOTONIC nanoseconds).
    var deadline: NIODeadline { .uptimeNanoseconds(nanoseconds) }

    init(_ deadline: NIODeadline) { self.init(nanoseconds: deadline.uptimeNanoseconds) }
}

extension Duration {
    var timeAmount: TimeAmount { .nanoseconds(wholeNanoseconds) }
}

extension TimeAmount {
    var duration: Duration { .nanoseconds(nanoseconds) }
}
