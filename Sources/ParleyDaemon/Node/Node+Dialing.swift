import NIOCore
import NIOPosix
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dialling: performs what `DialPlanner` decides (open a connection, arm or cancel a
/// target's redial timer) and feeds it the outcomes.
extension Node {
    /// What the planner may ask about sessions that are up.
    var sessionView: DialPlanner.SessionView {
        DialPlanner.SessionView(
            isConnected: { [unowned self] in self.sessions.isOnline($0) },
            online: { [unowned self] hint in
                guard let peer = self.sessions.peers.first(where: { Fingerprint($0).compact == hint }),
                      let conn = self.activeConnection(for: peer)
                else { return nil }
                return (identity: peer, host: conn.remoteAddress.hostPart)
            })
    }

    /// Adds a static peer: dialled now and re-dialled with backoff whenever no
    /// session to it is up.
    func addStaticPeer(_ address: HostPort) {
        loop.preconditionInEventLoop()
        perform(dialPlanner.addConfigured(DialAddress(address), sessions: sessionView))
    }

    /// Replaces the static peer set (configuration reload).
    func setStaticPeers(_ addresses: [HostPort]) {
        loop.preconditionInEventLoop()
        perform(dialPlanner.setConfigured(addresses.map(DialAddress.init), sessions: sessionView))
    }

    /// Dials an address given at run time (`parley connect`).
    func connect(address: String) throws(NodeError) {
        guard let hp = try? HostPort(parsing: address) else { throw .invalidAddress(address) }
        addStaticPeer(hp)
    }

    /// The addresses `peers.list` shows for a peer: its session's, then its dial targets'.
    func addresses(of identity: String) -> [String] {
        guard let key = IdentityPublicKey(hex: identity) else { return [] }
        var out: [String] = []
        if let c = activeConnection(for: key) { out.append(c.remoteAddress) }
        for t in dialPlanner.targets(of: key) where !out.contains(t.rawValue) { out.append(t.rawValue) }
        return out
    }

    func perform(_ actions: [DialPlanner.Action]) {
        for action in actions {
            switch action {
            case let .connect(key, address, expected): open(key, address, expectedFingerprint: expected)
            case let .armRedial(key, delay):
                redialTimers[key]?.cancel()
                redialTimers[key] = loop.scheduleTask(in: delay.timeAmount) { [weak self] in
                    guard let self else { return }
                    self.redialTimers[key] = nil
                    self.perform(self.dialPlanner.redialDue(key, sessions: self.sessionView, now: self.clock.monotonicNow()))
                }
            case .cancelRedial(let key):
                redialTimers.removeValue(forKey: key)?.cancel()
            }
        }
    }

    /// Opens a TCP connection for a dial target.
    private func open(_ key: DialTargetKey, _ address: DialAddress, expectedFingerprint: String?) {
        let conn = makeConnection(direction: .outbound, dialedAddress: key, expectedFingerprint: expectedFingerprint)
        // The handler is created here, on the loop, and only ever used on it.
        let bound = NIOLoopBound(conn, eventLoop: loop)
        ClientBootstrap(group: loop)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: PeerConnection.outboundWaterMark)
            .connectTimeout(options.handshakeTimeout)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(NoiseFrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(bound.value)
                }
            }
            .connect(host: address.host, port: Int(address.port))
            .whenComplete { [weak self] result in
                guard let self, case .failure(let error) = result else { return }
                self.links[ObjectIdentifier(bound.value)] = nil
                self.log.debug("dial failed", ["address": key.rawValue, "error": "\(error)"])
                self.perform(self.dialPlanner.attemptFailed(key, random: self.random))
            }
    }
}

extension DialAddress {
    init(_ hp: HostPort) { self.init(host: hp.host, port: hp.port) }
}
