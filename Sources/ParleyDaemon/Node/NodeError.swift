import ParleyCore
import ParleyStore

/// Errors a local user can cause through the control socket, each with a message
/// that says what to do.
enum NodeError: Error, CustomStringConvertible {
    case peerNotFound(String)
    case peerAmbiguous(String, [PeerRecord])
    case keyChangePending(PeerRecord)
    case bodyTooLarge(Int)
    case emptyBody
    case storage(StoreError)
    case fingerprintMismatch(expected: String, given: String)
    case noPendingKeyChange(String)
    case invalidAddress(String)
    case queueFull(PeerRecord, Int)
    /// A pending key change's recorded card no longer decodes (a damaged store row).
    case storedCardUnreadable(String, String)
    /// Key rotation needs the state directory, and this node was started without one.
    case noStateDirectory

    var description: String {
        switch self {
        case .peerNotFound(let q):
            return "no peer named '\(q)' (use a display name or a fingerprint prefix; see `parley peers`)"
        case let .peerAmbiguous(q, c):
            return "'\(q)' matches \(c.count) peers: " + c.map { "\($0.displayName) (\(Node.fingerprint(ofHex: $0.identity)))" }.joined(separator: ", ") + "; use a longer fingerprint prefix"
        case .keyChangePending(let p):
            return "\(p.displayName)'s identity key changed: nothing is sent until you compare fingerprints and run `parley trust accept-change \(p.displayName)`"
        case .bodyTooLarge(let n):
            return "message body is \(n) bytes; the limit is \(WireLimits.maxBodyBytes)"
        case .emptyBody:
            return "message body is empty"
        case .storage(let e):
            return "could not store the message, nothing was accepted: \(e)"
        case let .fingerprintMismatch(expected, given):
            return "fingerprint \(given) does not match the pinned key \(expected): do NOT trust this peer until you find out why"
        case .noPendingKeyChange(let q):
            return "no pending key change for '\(q)'"
        case let .queueFull(p, n):
            return "\(n) messages are already queued for \(p.displayName); nothing more is accepted until some are delivered"
        case let .storedCardUnreadable(name, why):
            return "the recorded new card for '\(name)' cannot be read (\(why)); run `parley peers` and wait for it to connect again, which records it anew"
        case .noStateDirectory:
            return "this daemon has no state directory to write a new key to; restart parleyd with --state-dir"
        case .invalidAddress(let a):
            return "invalid address '\(a)': expected HOST:PORT or [IPV6]:PORT"
        }
    }
}
