import NIOCore
import NIOPosix
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

#if canImport(Glibc)
    import Glibc
#endif

/// Dialling: `DialDriver` performs what `DialPlanner` decides (open a connection through
/// `open` here, arm or cancel a target's redial timer); the node feeds it the outcomes.
extension Node {
    /// What the planner may ask about sessions that are up.
    var sessionView: DialPlanner.SessionView {
        DialPlanner.SessionView(
            isConnected: { [unowned self] in self.sessionDriver.table.isOnline($0) },
            online: { [unowned self] hint in
                guard let peer = self.sessionDriver.table.peers.first(where: { Fingerprint($0).compact == hint }),
                    let conn = self.activeConnection(for: peer)
                else { return nil }
                return (identity: peer, host: conn.remoteAddress.hostPart)
            })
    }

    /// Adds a static peer: dialled now and re-dialled with backoff whenever no
    /// session to it is up.
    func addStaticPeer(_ address: HostPort) {
        loop.preconditionInEventLoop()
        perform(dialDriver.planner.addConfigured(DialAddress(address), sessions: sessionView))
    }

    /// Replaces the static peer set (configuration reload).
    func setStaticPeers(_ addresses: [HostPort]) {
        loop.preconditionInEventLoop()
        perform(dialDriver.planner.setConfigured(addresses.map(DialAddress.init), sessions: sessionView))
    }

    /// Dials an address given at run time (`parley connect`); returns the target, which
    /// `watchDial` follows for `connect --wait`.
    @discardableResult
    func connect(address: String) throws(NodeError) -> DialTargetKey {
        guard let hp = try? HostPort(parsing: address) else { throw .invalidAddress(address) }
        addStaticPeer(hp)
        return DialTargetKey(address: DialAddress(hp))
    }

    /// The addresses `peers.list` shows for a peer: its session's, then its dial targets'.
    func addresses(of key: IdentityPublicKey) -> [String] {
        var out: [String] = []
        if let c = activeConnection(for: key) { out.append(c.remoteAddress) }
        for t in dialDriver.planner.targets(of: key) {
            // A remembered peer's target is named by its identity: show its addresses.
            let shown =
                dialDriver.planner.targets[t]?.source == .remembered
                ? (dialDriver.planner.targets[t]?.candidates.map(\.description) ?? []) : [t.rawValue]
            for a in shown where !out.contains(a) { out.append(a) }
        }
        return out
    }

    func perform(_ actions: [DialPlanner.Action]) { dialDriver.perform(actions) }

    /// Opens a TCP connection for a dial target (`DialDriver.open`).
    func openConnection(_ key: DialTargetKey, _ address: DialAddress, expectedFingerprint: String?) {
        let conn = makeConnection(direction: .outbound, dialedAddress: key, expectedFingerprint: expectedFingerprint)
        // The handler is created here, on the loop, and only ever used on it.
        let bound = NIOLoopBound(conn, eventLoop: loop)
        let deadAfter = options.deadAfter.duration
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.writeBufferWaterMark, value: PeerConnection.outboundWaterMark)
            .channelOption(.recvAllocator, value: NoiseFrameDecoder.receiveAllocator)
            .connectTimeout(options.handshakeTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try SessionSocketOptions.apply(to: channel, deadAfter: deadAfter)
                    try channel.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
                    try channel.pipeline.syncOperations.addHandler(bound.value)
                }
            }
            .connect(host: address.host, port: Int(address.port))
            .whenComplete { [weak self] result in
                guard let self, case .failure(let error) = result else { return }
                self.sessionDriver.links[ObjectIdentifier(bound.value)] = nil
                self.log.debug("dial failed", ["address": key.rawValue, "error": "\(error)"])
                self.perform(self.dialDriver.planner.attemptFailed(key, random: self.dialDriver.random))
                self.finishDialWatch(key, .failed("cannot connect to \(key.rawValue): \(Self.describe(error))"))
            }
    }
}

extension Node {
    /// A connect error in words a user knows ("connection refused"), not NIO's type dump.
    static func describe(_ error: Error) -> String {
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if let c = error as? NIOConnectionError, let first = c.connectionErrors.first {
            return describe(first.error)
        }
        if error is ChannelError { return "\(error)" }
        return "\(error)"
    }
}

extension DialAddress {
    init(_ hp: HostPort) { self.init(host: hp.host, port: hp.port) }
}

/// Reconnecting without mDNS: the addresses peers were reached at or announced are kept
/// in the store and fed to `DialPlanner.remember`, which decides what to dial.
extension Node {
    /// At start: every remembered peer is dialled (unless it dials us first).
    func redialRememberedPeers() {
        guard let remembered = try? store.rememberedAddresses() else { return }
        for (identity, addresses) in remembered.sorted(by: { $0.key < $1.key }) {
            let parsed = addresses.compactMap { try? HostPort(parsing: $0) }.map(DialAddress.init)
            perform(dialDriver.planner.remember(identity, addresses: parsed, sessions: sessionView))
        }
    }

    /// A blocked or forgotten peer is not dialled at its remembered addresses any more.
    func stopDialingRemembered(_ key: IdentityPublicKey) {
        perform(dialDriver.planner.remove(DialTargetKey(rememberedPeer: key)))
        gossipDriver.gossip.forget(key)
    }

    /// `peer` can be reached at these "host:port" addresses: store them and tell the planner.
    func rememberAddresses(of peer: IdentityPublicKey, _ addresses: [String]) {
        let parsed = addresses.compactMap { try? HostPort(parsing: $0) }.filter { $0.port != 0 }
        guard !parsed.isEmpty else { return }
        for hp in parsed {
            try? store.rememberAddress(DialAddress(hp).description, of: peer, at: nowMs)
        }
        perform(dialDriver.planner.remember(peer, addresses: parsed.map(DialAddress.init), sessions: sessionView))
    }

    /// The peer's `listenPorts` record: it listens on these ports of the host its session
    /// comes from. Only the active session's announcement counts.
    func connection(_ conn: PeerConnection, announcedListenPorts ports: [UInt16]) {
        guard let peer = activePeer(of: conn) else { return }
        let host = conn.remoteAddress.hostPart
        let shown = host.contains(":") ? "[\(host)]" : host
        rememberAddresses(of: peer, ports.prefix(WireLimits.maxListenPorts).map { "\(shown):\($0)" })
    }
}
