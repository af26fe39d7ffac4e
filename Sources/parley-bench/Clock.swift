#if canImport(Glibc)
    import Glibc
#endif

/// Monotonic time in nanoseconds: every interval the benchmark reports is a difference
/// of two of these, taken in this one process, so the clocks always agree.
enum Clock {
    static func nowNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// CPU time used by the calling thread: what one side of an in-process handshake costs,
    /// unaffected by the other processes sharing the machine's two cores.
    static func threadCPUNs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func sleep(milliseconds: Int) {
        var want = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var left = timespec()
        while nanosleep(&want, &left) != 0 && errno == EINTR { want = left }
    }
}

/// A deadline on the monotonic clock: every loop in the benchmark checks one, so no
/// row can run longer than its budget even if a daemon stalls.
struct Deadline {
    let ns: UInt64
    init(seconds: Double) { ns = Clock.nowNs() + UInt64(seconds * 1e9) }
    var passed: Bool { Clock.nowNs() >= ns }
    /// Milliseconds left, at least 0 (for poll).
    var millisecondsLeft: Int32 {
        let now = Clock.nowNs()
        return now >= ns ? 0 : Int32(clamping: (ns - now) / 1_000_000 + 1)
    }
}
