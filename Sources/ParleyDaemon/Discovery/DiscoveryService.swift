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

    static func advertisement(for card: Card, port: UInt16) -> ServiceAdvertisement {
        ServiceAdvertisement(instanceName: card.displayName, port: port, txt: [
            ParleyTXT.versionKey: ParleyTXT.protocolVersion,
            ParleyTXT.fingerprintKey: card.fingerprint.compact,
        ])
    }

    func start() {
        MDNSDiscovery.silenceAvahiCompatibilityWarning()
        let ad = Self.advertisement(for: node.card, port: port)
        let node = self.node
        let info = self.info
        let log = self.log
        let d = MDNSDiscovery(advertisement: ad, browse: true, queue: queue) { event in
            node.loop.execute {
                switch event {
                case .registered(let name):
                    info.mdns = .on
                    node.ownInstanceName = name
                    log.info("advertised on mDNS", ["instance": name])
                case .available:
                    info.mdns = .on
                    log.info("avahi-daemon is available; discovery running")
                case .unavailable(let reason):
                    info.mdns = .unavailable
                    log.warning("mDNS discovery unavailable (static peers still work); retrying", ["reason": reason])
                case .found(let peer):
                    node.discovered(instance: peer.instanceName, addresses: peer.addresses, port: peer.port,
                                    fingerprintHint: peer.txt[ParleyTXT.fingerprintKey],
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
    }

    /// Re-advertises after the card changed (new display name).
    func update(card: Card) {
        mdns?.updateAdvertisement(Self.advertisement(for: card, port: port))
    }

    /// Withdraws the advertisement; waits briefly so the goodbye packet is sent.
    func stop() {
        guard let mdns else { return }
        let done = DispatchSemaphore(value: 0)
        mdns.stop { done.signal() }
        _ = done.wait(timeout: .now() + .seconds(2))
        self.mdns = nil
    }
}
