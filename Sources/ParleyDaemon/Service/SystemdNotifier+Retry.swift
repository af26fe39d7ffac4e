import NIOCore

/// A notification the full notify socket dropped (`SystemdNotifyError.socketFull`) is sent
/// again shortly after, from the event loop, never waited for. systemd's notify socket is
/// one queue for every service on the host (`net.unix.max_dgram_qlen` datagrams), so it can
/// be full for a moment while PID 1 is busy (a boot, many units starting). Dropped for
/// good, a READY=1 would leave the start to time out (the unit killed), and a WATCHDOG=1
/// would leave the next ping, half the watchdog timeout later, landing on the deadline.
extension SystemdNotifier {
    /// Pause between tries while the socket is full.
    public static let retryDelay: TimeAmount = .milliseconds(100)
    /// Tries in all (5 s with `retryDelay`): far inside the watchdog's timeout (30 s in
    /// the shipped units; pings every 15 s) and the start timeout (90 s by default), and
    /// bounded, so a socket nobody ever reads costs one timer per notification for 5 s.
    public static let maxAttemptsWhileFull = 50

    /// Sends with `send`; while the socket is full, again every `delay` on `loop`, at most
    /// `attempts` times in all. `finished` gets the last result (to log a failure); it
    /// runs on the caller's thread when the first try settles it, else on `loop`.
    public func sendRetryingWhileFull(
        on loop: EventLoop, attempts: Int = SystemdNotifier.maxAttemptsWhileFull,
        delay: TimeAmount = SystemdNotifier.retryDelay,
        _ send: @escaping @Sendable (SystemdNotifier) -> Result<Void, SystemdNotifyError>,
        finished: @escaping @Sendable (Result<Void, SystemdNotifyError>) -> Void = { _ in }
    ) {
        let result = send(self)
        guard case .failure(.socketFull) = result, attempts > 1 else {
            finished(result)
            return
        }
        loop.scheduleTask(in: delay) {
            self.sendRetryingWhileFull(on: loop, attempts: attempts - 1, delay: delay, send, finished: finished)
        }
    }
}
