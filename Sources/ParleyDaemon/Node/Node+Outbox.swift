import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The one-to-one message path is `DirectMessageDriver`'s: local sends, the pump, received
/// chats and acknowledgements. The node routes to it (the delegate callbacks of
/// `PeerConnection` and the local API) and is its host: what the driver asks of sessions,
/// the other lanes, the receive quota, gossip and the observers.
extension Node {
    // MARK: Routing

    /// Queues a message durably; returns once it is on disk.
    func send(to peer: PeerRecord, body: String) throws(NodeError) -> StoredMessage {
        try sendMany([(peer, body)])[0].get()
    }

    /// `DirectMessageDriver.send`: several messages in one transaction.
    func sendMany(_ items: [(PeerRecord, String)], replyTo: MessageID? = nil) -> [Result<StoredMessage, NodeError>] {
        directMessages.send(items, replyTo: replyTo)
    }

    /// `DirectMessageDriver.pump`: what is queued for the peer of `conn`, every lane.
    func pump(_ conn: PeerConnection) { directMessages.pump(conn) }

    func connectionBecameWritable(_ conn: PeerConnection) {
        pump(conn)
        pumpFiles(conn)
    }

    func connection(_ conn: PeerConnection, received chats: [ChatRecord]) {
        directMessages.received(chats, on: conn)
    }

    func connection(_ conn: PeerConnection, acknowledged ids: [MessageID]) {
        directMessages.acknowledged(ids, on: conn)
    }

    /// Acknowledges stored records, at most `WireLimits.maxAcksPerRecord` ids per ack record.
    func sendAcks(_ ids: [MessageID], on conn: PeerConnection) { conn.sendAcks(ids) }
}

// MARK: The host of the one-to-one message path

extension Node: DirectMessageHost {
    typealias Link = PeerConnection

    func withWindow<R>(of link: PeerConnection, _ body: (inout SendWindow) -> R) -> R? {
        let handle = ObjectIdentifier(link)
        guard sessionDriver.links[handle] != nil else { return nil }
        return body(&sessionDriver.links[handle]!.window)
    }

    func promote(_ peer: IdentityPublicKey) { sessionDriver.promote(peer) }

    func wroteTo(_ peer: IdentityPublicKey) {
        // The first time: gossip starts on the session already up (`GossipDriver.wroteTo`).
        guard gossipDriver.wroteTo(peer), let conn = activeConnection(for: peer) else { return }
        startGossip(on: conn, peer: peer)
    }
}
