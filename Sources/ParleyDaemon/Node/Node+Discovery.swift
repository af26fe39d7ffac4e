import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dial targets found by mDNS: routed to `DialDriver` (`AdvertisementTriage`, then the
/// planner), with presence tokens and fingerprints looked up in `PeerDirectory`.
/// Discovery says where a node might be; the handshake says who it is.
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
                recognise: { [unowned self] in
                    self.peerDirectory.presenceMatch(
                        $0, me: self.myIdentityKey, networkKey: self.ownIdentity.networkKey?.copyBytes(),
                        unixSeconds: UInt64(max(0, self.nowMs / 1000)))
                },
                isKnown: { [unowned self] in self.peerDirectory.isKnown(compactFingerprint: $0) }))
        if verdict == .ownAdvertisement { gossipDriver.ownAdvertisementSeen = true }
    }

    func discoveryLost(instance: String) {
        loop.preconditionInEventLoop()
        dialDriver.advertisementLost(instance: instance)
    }
}
