import Dispatch
import ParleyCore
import ParleyDiscovery

/// Connects the mDNS/DNS-SD module to the node: advertises this node as
/// `_parley._tcp`, and turns browse results into dial targets. Discovery only
/// finds addresses; trust always comes from the signed card in the handshake.
final class DiscoveryService: @unchecked Sendable {
    private let node: Node
    private let info: DaemonRuntimeInfo
    private let log: Logger
    private let port: UInt16
    private let queue = DispatchQueue(label: "parleyd.discovery")
    private var mdns: MDNSDiscovery?

    init(node: Node, info: DaemonRuntimeInfo, log: Logger, port: UInt16) {
        self.node = node
        self.info = info
        self.log = log
        self.port = port
    }

    /// Private presence (docs/PROTOCOL.md "Discovery"): a random instance name and a
    /// rotating token only contacts (and, with a network key, only members) recognise; no
    /// fingerprint, no display name, no host name.
    static func advertisement(
        for card: Card, port: UInt16, networkKey: [UInt8]?, unixSeconds: UInt64,
        nonce: [UInt8] = Sodium.randomBytes(PresenceToken.nonceLength)
    ) -> ServiceAdvertisement {
        let token = PresenceToken.make(
            identity: card.identityKey, networkKey: networkKey,
            epoch: PresenceToken.epoch(atUnixSeconds: unixSeconds), nonce: nonce)
        let label = Sodium.hex(Sodium.randomBytes(5))
        return ServiceAdvertisement(
            instanceName: ParleyTXT.anonymousInstancePrefix + label, port: port,
            txt: [
                ParleyTXT.versionKey: ParleyTXT.protocolVersion,
                ParleyTXT.nonceKey: Sodium.hex(nonce),
                ParleyTXT.tokenKey: Sodium.hex(token)
            ])
    }

    private func currentAdvertisement(card: Card) -> ServiceAdvertisement {
        Self.advertisement(
            for: card, port: port, networkKey: node.ownIdentity.networkKey?.copyBytes(),
            unixSeconds: UInt64(max(0, Node.nowMs() / 1000)))
    }

    /// A new token (and instance name) every epoch, so an advertisement cannot be linked to
    /// the previous one; the timer runs on the discovery queue.
    private var rotation: DispatchSourceTimer?

    private func startRotation() {
        let timer = DispatchSource.makeTimerSource(queue: queue)
        let interval = Int(PresenceToken.epochSeconds)
        let intoEpoch = Int(UInt64(max(0, Node.nowMs() / 1000)) % PresenceToken.epochSeconds)
        timer.schedule(deadline: .now() + .seconds(interval - intoEpoch + 1), repeating: .seconds(interval))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            self.node.loop.execute { self.update(card: self.node.ownIdentity.card) }
        }
        timer.resume()
        rotation = timer
    }

    func start() {
        MDNSDiscovery.silenceAvahiCompatibilityWarning()
        let ad = currentAdvertisement(card: node.ownIdentity.card)
        let node = self.node
        let info = self.info
        let log = self.log
        let d = MDNSDiscovery(advertisement: ad, browse: true, queue: queue) { event in
            node.loop.execute {
                switch event {
                case .registered(let name):
                    info.mdns = .on
                    node.gossipDriver.ownInstanceName = name
                    log.info("advertised on mDNS", ["instance": name])
                case .available:
                    info.mdns = .on
                    log.info("avahi-daemon is available; discovery running")
                case .unavailable(let reason):
                    info.mdns = .unavailable
                    log.warning("mDNS discovery unavailable (static peers still work); retrying", ["reason": reason])
                case .ownAdvertisementBrowsed(let name):
                    if name == node.gossipDriver.ownInstanceName { node.gossipDriver.ownAdvertisementSeen = true }
                case .found(let peer):
                    let presence = peer.txt[ParleyTXT.nonceKey].flatMap(Sodium.fromHex).flatMap { nonce in
                        peer.txt[ParleyTXT.tokenKey].flatMap(Sodium.fromHex).map { (nonce: nonce, token: $0) }
                    }
                    node.discovered(
                        instance: peer.instanceName, addresses: peer.addresses, port: peer.port,
                        fingerprintHint: peer.txt[ParleyTXT.fingerprintKey], presence: presence,
                        version: peer.txt[ParleyTXT.versionKey])
                case .lost(let name):
                    node.discoveryLost(instance: name)
                case let .addressLookupFailed(host, reason):
                    log.warning("cannot resolve a discovered host name to an address", ["host": host, "reason": reason])
                }
            }
        }
        mdns = d
        d.start()
        startRotation()
    }

    /// Re-advertises after the card changed (new display name).
    func update(card: Card) {
        mdns?.updateAdvertisement(currentAdvertisement(card: card))
    }

    /// Withdraws the advertisement; waits briefly so the goodbye packet is sent.
    func stop() {
        rotation?.cancel()
        rotation = nil
        guard let mdns else { return }
        let done = DispatchSemaphore(value: 0)
        mdns.stop { done.signal() }
        _ = done.wait(timeout: .now() + .seconds(2))
        self.mdns = nil
    }
}
