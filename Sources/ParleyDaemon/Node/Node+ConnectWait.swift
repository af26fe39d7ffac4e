import ParleyCore
import ParleyNodeCore

/// How one dial of a target ended, for `peers.connect` with `wait`.
enum DialOutcome {
    /// A session with this peer is up (or already was).
    case connected(identity: IdentityPublicKey)
    /// The TCP connection, the handshake or the peer's trust refused us; the text says which
    /// (`DialAttemptEnd`).
    case failed(String)
}

/// `parley connect` waits for the outcome of the dial it started instead of printing
/// "Dialing…" and leaving failures to the debug log. `DialDriver` keeps the watchers and
/// reports outcomes to whoever registered for a target; the control connection owns the
/// timeout.
extension Node {
    /// Calls `report` once, with the outcome of the next attempt on `key` (at once if a
    /// session through it is already up). Returns a token to cancel the watch.
    func watchDial(_ key: DialTargetKey, _ report: @escaping (DialOutcome) -> Void) -> Int {
        loop.preconditionInEventLoop()
        return dialDriver.watch(key, report)
    }

    func cancelDialWatch(_ key: DialTargetKey, token: Int) { dialDriver.cancelWatch(key, token: token) }

    /// A target a failed `connect --wait` added stops being dialled (`DialDriver.forgetFailedTarget`).
    func forgetDialTarget(_ key: DialTargetKey) { dialDriver.forgetFailedTarget(key) }
}
