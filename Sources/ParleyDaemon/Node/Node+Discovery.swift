import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dial targets found by mDNS. Discovery says where a node might be; the
/// handshake says who it is.
extension Node {
    func discovered(instance: String, addresses: [String], port: UInt16, fingerprintHint: String?, version: String?) {
        loop.preconditionInEventLoop()
        if instance == ownInstanceName { return }
        if let hint = fingerprintHint, hint == fingerprint.compact { return }
        if let version, version != "1" {
            log.debug("ignoring an advertisement for another protocol version", ["instance": instance, "v": version])
            return
        }
        let candidates = addresses.compactMap { try? HostPort(host: $0, port: port) }.map(DialAddress.init)
        guard !candidates.isEmpty else { return }
        // Known peers first: the table of advertised targets is bounded, and dials of
        // addresses advertised by strangers are rate-limited per host (DialPlanner).
        let known = fingerprintHint.map(isKnownPeer(compactFingerprint:)) ?? false
        let before = dialPlanner.discoveredCount
        let key = DialTargetKey(mdnsInstance: instance)
        perform(dialPlanner.addDiscovered(key, candidates: candidates, fingerprintHint: fingerprintHint, known: known,
                                          sessions: sessionView, now: clock.monotonicNow()))
        if dialPlanner.targets[key] == nil, before >= dialPlanner.maxDiscovered {
            attackLog.log(key: "adverts-full", "too many advertised peers; ignoring new unknown ones",
                          ["limit": "\(dialPlanner.maxDiscovered)"])
        }
    }

    /// Whether a pinned or verified peer has this compact fingerprint.
    func isKnownPeer(compactFingerprint: String) -> Bool {
        ((try? allPeers()) ?? []).contains {
            $0.trust != .blocked && IdentityPublicKey(hex: $0.identity).map { Fingerprint($0).compact } == compactFingerprint
        }
    }

    func discoveryLost(instance: String) {
        loop.preconditionInEventLoop()
        perform(dialPlanner.remove(DialTargetKey(mdnsInstance: instance)))
    }
}
