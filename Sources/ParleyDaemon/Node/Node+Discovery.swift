import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dial targets found by mDNS. Discovery says where a node might be; the
/// handshake says who it is.
extension Node {
    func discovered(
        instance: String, addresses: [String], port: UInt16, fingerprintHint: String?,
        presence: (nonce: [UInt8], token: [UInt8])? = nil, version: String?
    ) {
        loop.preconditionInEventLoop()
        if instance == gossipDriver.ownInstanceName {
            gossipDriver.ownAdvertisementSeen = true
            return
        }
        if let hint = fingerprintHint, hint == fingerprint.compact { return }
        // Private presence: the token names a contact only to us; a match becomes the
        // fingerprint the handshake must prove (the spoof check), like a legacy `fp`.
        var fingerprintHint = fingerprintHint
        if fingerprintHint == nil, let presence {
            if recognises(presence, as: myIdentityKey) {  // our own advertisement
                gossipDriver.ownAdvertisementSeen = true
                return
            }
            fingerprintHint = contact(presentedBy: presence).map { Fingerprint($0).compact }
        }
        if let version, version != "1" {
            log.debug("ignoring an advertisement for another protocol version", ["instance": instance, "v": version])
            return
        }
        let candidates = addresses.compactMap { try? HostPort(host: $0, port: port) }.map(DialAddress.init)
        guard !candidates.isEmpty else { return }
        // Known peers first: the table of advertised targets is bounded, and dials of
        // addresses advertised by strangers are rate-limited per host (DialPlanner).
        let known = fingerprintHint.map(isKnownPeer(compactFingerprint:)) ?? false
        let before = dialDriver.planner.discoveredCount
        let key = DialTargetKey(mdnsInstance: instance)
        perform(
            dialDriver.planner.addDiscovered(
                key, candidates: candidates, fingerprintHint: fingerprintHint, known: known,
                presenceToken: presence?.token, sessions: sessionView, now: clock.monotonicNow()))
        if dialDriver.planner.targets[key]?.suspicious == true {
            attackLog.log(
                key: "presence-replay",
                "a presence token was advertised again at another address (a replayed advertisement?); "
                    + "it is dialled only at the per-host rate, and not while its peer is connected",
                ["instance": instance, "addresses": candidates.map(\.description).joined(separator: ",")])
        }
        if dialDriver.planner.targets[key] == nil, before >= dialDriver.planner.maxDiscovered {
            attackLog.log(
                key: "adverts-full", "too many advertised peers; ignoring new unknown ones",
                ["limit": "\(dialDriver.planner.maxDiscovered)"])
        }
    }

    /// The known (not blocked) peer whose presence token this is, if any. One HMAC per
    /// peer and epoch: a few hundred contacts cost well under a millisecond per advert.
    func contact(presentedBy presence: (nonce: [UInt8], token: [UInt8])) -> IdentityPublicKey? {
        peerDirectory.firstUnblocked { recognises(presence, as: $0) }
    }

    private func recognises(_ presence: (nonce: [UInt8], token: [UInt8]), as key: IdentityPublicKey) -> Bool {
        PresenceToken.matches(
            presence.token, nonce: presence.nonce, identity: key, networkKey: ownIdentity.networkKey?.copyBytes(),
            epoch: PresenceToken.epoch(atUnixSeconds: UInt64(max(0, nowMs / 1000))))
    }

    /// Whether a pinned or verified peer has this compact fingerprint.
    func isKnownPeer(compactFingerprint: String) -> Bool {
        peerDirectory.firstUnblocked { Fingerprint($0).compact == compactFingerprint } != nil
    }

    func discoveryLost(instance: String) {
        loop.preconditionInEventLoop()
        perform(dialDriver.planner.remove(DialTargetKey(mdnsInstance: instance)))
    }
}
