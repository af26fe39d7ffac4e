import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore

/// Dialling: routes to `DialDriver`, which performs what `DialPlanner` decides and keeps
/// the address book; `openConnection` here builds the NIO bootstrap it asks for.
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
        for a in dialDriver.shownAddresses(of: key) where !out.contains(a) { out.append(a) }
        return out
    }

    func perform(_ actions: [DialPlanner.Action]) { dialDriver.perform(actions) }

    /// Opens a TCP connection for a dial target (`DialDriver.open`): a handler made here
    /// (the node is its delegate), dialled by `SessionDialer`; a failed connect is forgotten
    /// by the sessions driver and reported to the dial driver.
    func openConnection(_ key: DialTargetKey, _ address: DialAddress, expectedFingerprint: String?) {
        let conn = makeConnection(direction: .outbound, dialedAddress: key, expectedFingerprint: expectedFingerprint)
        let handle = ObjectIdentifier(conn)
        SessionDialer.dial(
            conn, to: address, on: loop, connectTimeout: options.handshakeTimeout,
            deadAfter: options.deadAfter.duration
        ) { [weak self] error in
            guard let self else { return }
            self.sessionDriver.links[handle] = nil
            self.dialDriver.connectFailed(key, error)
        }
    }
}

/// Reconnecting without mDNS: the addresses peers were reached at or announced are kept
/// in the store and fed to `DialPlanner.remember` (`DialDriver`), which decides what to dial.
extension Node {
    /// At start: every remembered peer is dialled (unless it dials us first).
    func redialRememberedPeers() { dialDriver.redialRemembered() }

    /// A blocked or forgotten peer is not dialled at its remembered addresses any more.
    func stopDialingRemembered(_ key: IdentityPublicKey) {
        perform(dialDriver.planner.remove(DialTargetKey(rememberedPeer: key)))
        gossipDriver.gossip.forget(key)
    }

    /// `peer` can be reached at these "host:port" addresses: store them and tell the planner.
    func rememberAddresses(of peer: IdentityPublicKey, _ addresses: [String]) {
        dialDriver.remember(peer, at: addresses)
    }

    /// The peer's `listenPorts` record: it listens on these ports of the host its session
    /// comes from. Only the active session's announcement counts.
    func connection(_ conn: PeerConnection, announcedListenPorts ports: [UInt16]) {
        guard let peer = activePeer(of: conn) else { return }
        let host = conn.remoteAddress.hostPart
        let shown = host.contains(":") ? "[\(host)]" : host
        dialDriver.remember(peer, at: ports.prefix(WireLimits.maxListenPorts).map { "\(shown):\($0)" })
    }
}
