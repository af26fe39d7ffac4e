import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dial targets found by mDNS: routed to `DialDriver` (`AdvertisementTriage`, then the
/// planner). Discovery says where a node might be; the handshake says who it is.
extension Node {
    func discovered(
        instance: String, addresses: [String], port: UInt16, fingerprintHint: String?,
        presence: (nonce: [UInt8], token: [UInt8])? = nil, version: String?
    ) {
        loop.preconditionInEventLoop()
        let verdict = dialDriver.advertised(
            DialDriver.Advertisement(
                instance: instance, addresses: addresses, port: port, fingerprintHint: fingerprintHint,
                presence: presence, version: version),
            from: DialDriver.Viewpoint(
                ownInstance: gossipDriver.ownInstanceName, ownFingerprint: fingerprint.compact,
                recognise: { [unowned self] in self.presenceMatch($0) },
                isKnown: { [unowned self] in self.isKnownPeer(compactFingerprint: $0) }))
        if verdict == .ownAdvertisement { gossipDriver.ownAdvertisementSeen = true }
    }

    /// Who a private presence token names: us, a known (not blocked) peer, or nobody.
    private func presenceMatch(_ presence: (nonce: [UInt8], token: [UInt8])) -> AdvertisementTriage.PresenceMatch {
        if recognises(presence, as: myIdentityKey) { return .ours }
        return contact(presentedBy: presence).map { .contact($0) } ?? .nobody
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
        dialDriver.advertisementLost(instance: instance)
    }
}
