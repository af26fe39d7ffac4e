/// The kernel's TCP keepalive and user timeout for a session socket (docs/PROTOCOL.md
/// "Liveness"), derived from the daemon's `dead_after`. The kernel sends the probes and the
/// peer's kernel answers them, so an idle session costs neither daemon a wake-up; a cut
/// link or a host that vanished (power, suspend, cable) is reported as a socket error.
///
/// A LAN attacker who can answer or drop these probes can make a dead session look alive
/// or a live one look dead; dropping or forging ordinary traffic does the same, so the
/// probes give them nothing new. The application ping (`KeepalivePolicy`) still catches a
/// peer whose kernel answers while its daemon does not.
public struct KernelKeepalive: Sendable, Equatable {
    /// TCP_KEEPIDLE: seconds of receiving nothing before the first probe.
    public let idleSeconds: Int32
    /// TCP_KEEPINTVL: seconds between unanswered probes.
    public let intervalSeconds: Int32
    /// TCP_KEEPCNT: unanswered probes before the kernel gives up. With a user timeout set,
    /// Linux gives up at the first probe past the user timeout instead; kept consistent
    /// for kernels that ignore it.
    public let probeCount: Int32
    /// TCP_USER_TIMEOUT: how long sent data (or a probe) may stay unacknowledged before
    /// the connection fails: a message written into a cut link fails after `deadAfter`
    /// instead of the ~15 minutes of default retransmission.
    public let userTimeoutMilliseconds: UInt32

    /// Three probe intervals make `deadAfter`: the first probe after a third of it of
    /// silence, then one every third; the kernel's timers count whole seconds, so each is
    /// at least 1 s.
    public init(deadAfter: Duration) {
        let ms = max(deadAfter.wholeMilliseconds, 1)
        let third = Int32(clamping: max(1, (ms / 3 + 999) / 1000))
        idleSeconds = third
        intervalSeconds = third
        probeCount = 3
        userTimeoutMilliseconds = UInt32(clamping: ms)
    }

    /// The longest a cut link can go unnoticed while the session is idle: the kernel gives
    /// up at the first probe whose silence reaches the user timeout.
    public var worstDetection: Duration {
        let probesNeeded = max(
            0,
            (Int64(userTimeoutMilliseconds) - Int64(idleSeconds) * 1000 + Int64(intervalSeconds) * 1000 - 1)
                / (Int64(intervalSeconds) * 1000))
        return .seconds(Int64(idleSeconds) + probesNeeded * Int64(intervalSeconds))
    }
}
