import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Read state: the local user reading a conversation (and the receipts that tell the
/// sender), and the receipts peers send about our messages. Routed to `ConversationDriver`.
extension Node {

    /// The local user read the conversation with `peer` up to `upTo` (a cursor; nil: all).
    /// Returns how many messages changed and how many from the peer are still unread.
    func markRead(_ peer: PeerRecord, upTo: Int64?) throws(NodeError) -> (marked: Int, unread: Int) {
        try conversation.markRead(peer.identity, upTo: upTo)
    }

    /// Hands the read receipts owed to the peer of `conn` to that session.
    func sendPendingReadReceipts(_ conn: PeerConnection) { conversation.sendPendingReadReceipts(conn) }

    func connection(_ conn: PeerConnection, receivedReadReceipts ids: [MessageID]) {
        guard activePeer(of: conn) != nil else { return }
        // The reader stored the message before reading it: a receipt implies the ack (which
        // may have been lost with an earlier session). Already-delivered ones are unchanged.
        connection(conn, acknowledged: ids)
        // Only a delivered message is marked read: the marks waiting for a transaction
        // (`DeliveryMarkFold`, this ack's or one just before it) are written first.
        directMessages.flushDeliveryMarks()
        conversation.readReceiptsReceived(ids, on: conn)
    }
}
