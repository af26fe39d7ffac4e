import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Read state: the local user reading a conversation (and the receipts that tell the
/// sender), and the receipts peers send about our messages.
extension Node {
    /// Most read-receipt records handed to one session at a time (each names up to
    /// `WireLimits.maxAcksPerRecord` messages): 100,000 receipts, about 1.6 MB, bounds the
    /// work of one call; anything beyond goes with the next session or the next read.
    static let maxReadReceiptRecordsPerFlush = 100

    /// The local user read the conversation with `peer` up to `upTo` (a cursor; nil: all).
    /// Returns how many messages changed and how many from the peer are still unread.
    func markRead(_ peer: PeerRecord, upTo: Int64?) throws(NodeError) -> (marked: Int, unread: Int) {
        loop.preconditionInEventLoop()
        let ids: [MessageID]
        let unread: Int
        do {
            ids = try store.markIncomingRead(
                from: peer.identity, upTo: upTo, at: nowMs,
                queueReceipts: messageDriver.sendsReadReceipts)
            unread = try store.unreadCounts()[peer.identity] ?? 0
        } catch {
            throw .storage(error)
        }
        if !ids.isEmpty, let conn = activeConnection(for: peer.identity) { sendPendingReadReceipts(conn) }
        return (ids.count, unread)
    }

    /// Hands the read receipts owed to the peer of `conn` to that session. Receipts are
    /// not acknowledged: once written to a session they are no longer owed (see
    /// docs/PROTOCOL.md, readReceipt). With read receipts off nothing is sent.
    func sendPendingReadReceipts(_ conn: PeerConnection) {
        guard messageDriver.sendsReadReceipts, let peer = activePeer(of: conn) else { return }
        for _ in 0..<Self.maxReadReceiptRecordsPerFlush {
            let ids: [MessageID]
            do {
                ids = try store.pendingReadReceipts(to: peer, limit: WireLimits.maxAcksPerRecord)
                guard !ids.isEmpty else { return }
                conn.send(.readReceipt(ids))
                try store.clearPendingReadReceipts(ids: ids, from: peer)
            } catch {
                log.error(
                    "could not read or update owed read receipts; they are sent with the next session",
                    ["error": "\(error)"])
                return
            }
            if ids.count < WireLimits.maxAcksPerRecord { return }
        }
    }

    func connection(_ conn: PeerConnection, receivedReadReceipts ids: [MessageID]) {
        guard let peer = activePeer(of: conn) else { return }
        // The reader stored the message before reading it: a receipt implies the ack (which
        // may have been lost with an earlier session). Already-delivered ones are unchanged.
        connection(conn, acknowledged: ids)
        // Only a delivered message is marked read: the marks waiting for a transaction
        // (`DeliveryMarkFold`, this ack's or one just before it) are written first.
        directMessages.flushDeliveryMarks()
        do {
            let read = try store.markReadByRecipient(ids: ids, by: peer, at: nowMs)
            for m in read { emit(.messageRead(m)) }
        } catch {
            log.error("could not record read receipts", ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }
}
