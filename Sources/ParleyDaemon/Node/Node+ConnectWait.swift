import ParleyCore
import ParleyNodeCore

/// How one dial of a target ended, for `peers.connect` with `wait`.
enum DialOutcome {
    /// A session with this peer is up (or already was).
    case connected(identity: IdentityPublicKey)
    /// The TCP connection, the handshake or the peer's trust refused us; the text says which.
    case failed(String)
}

/// `parley connect` waits for the outcome of the dial it started instead of printing
/// "Dialing…" and leaving failures to the debug log. The node only reports outcomes to
/// whoever registered for a target; the control connection owns the timeout.
extension Node {
    /// Calls `report` once, with the outcome of the next attempt on `key` (at once if a
    /// session through it is already up). Returns a token to cancel the watch.
    func watchDial(_ key: DialTargetKey, _ report: @escaping (DialOutcome) -> Void) -> Int {
        loop.preconditionInEventLoop()
        return dialDriver.watch(key, report)
    }

    func cancelDialWatch(_ key: DialTargetKey, token: Int) { dialDriver.cancelWatch(key, token: token) }

    /// The dial of `key` ended: tell every watcher.
    func finishDialWatch(_ key: DialTargetKey, _ outcome: DialOutcome) { dialDriver.finishWatch(key, outcome) }

    /// A target a failed `connect --wait` added stops being dialled: the user was told it
    /// failed and decides whether to try again (a configured `--peer` stays).
    func forgetDialTarget(_ key: DialTargetKey) {
        guard dialDriver.planner.targets[key]?.source == .configured, dialDriver.planner.targets[key]?.identity == nil
        else { return }
        perform(dialDriver.planner.remove(key))
    }
}

extension Node {
    /// Why a dialled connection closed without a session, for the user who waited on it.
    static func whyNoSession(_ conn: PeerConnection, error: Error?, address: String) -> String {
        switch conn.remoteCloseReason {
        case .keyChangePending?:
            return "\(address) refused us: it holds a key change for this node that its user has not accepted"
        case .notTrusted?:
            return "\(address) refused us: it does not trust this node (blocked, or a name clash)"
        case .duplicate?:
            return "\(address) kept another session with this node"
        default:
            break
        }
        if conn.established == nil {
            let detail = error.map { ": \($0)" } ?? ""
            return
                "the handshake with \(address) failed\(detail) (is it a parleyd of the same network key and version?)"
        }
        return "the session with \(address) closed before it was kept\(error.map { ": \($0)" } ?? "")"
    }
}
