import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the node keeps from peers (issue 15), routed to `ReceiveQuotaDriver`: incoming
/// chats are judged before they are stored; the ones over a quota, or arriving while the
/// disk is under its floor, are answered with a `refused` record instead of an ack
/// (docs/PROTOCOL.md "refused"). At the sender, a refusal frees the message's place in the
/// send window and is recorded; the message stays queued for the next session. The names
/// other files call (the direct message path's host, rooms, room sync, files) stay here.
extension Node {
    // MARK: Receiving

    /// Splits one read's chats from `sender` into those to store and those refused (with
    /// their reason). Chats already stored (a resend) always go on to be acknowledged.
    /// Throws when the store cannot count what `sender` has stored: nothing is judged
    /// admissible then; the caller (`DirectMessageDriver.received`) stores and acknowledges
    /// none and closes the session, so the sender keeps them queued and sends them again
    /// at the next session.
    func judgeByQuota(_ chats: [ChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [ChatRecord], refused: [(RefusalReason, [MessageID])])
    {
        let (verdicts, refused) = try messageDriver.quota.judge(chats.map { ($0.id, $0.body.utf8.count) }, from: sender)
        return (zip(chats, verdicts).filter { $0.1 == nil }.map(\.0), refused)
    }

    /// The same for room chats (counted against their author's quota like direct ones).
    /// Throws when the store cannot count: the caller stores none of them and closes the
    /// session they came on (the rest stays queued at the sender).
    func judgeByQuota(_ chats: [RoomChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [RoomChatRecord], refused: [(RefusalReason, [MessageID])])
    {
        let (verdicts, refused) = try messageDriver.quota.judge(chats.map { ($0.id, $0.body.utf8.count) }, from: sender)
        return (zip(chats, verdicts).filter { $0.1 == nil }.map(\.0), refused)
    }

    /// The same for edits, deletes and reactions (direct ones from the session's peer, or
    /// signed room changes counted against their author): each row the store would keep
    /// counts as one message with its text's bytes. Returns the refused, by reason.
    func judgeActionsByQuota(_ actions: [(id: MessageID, size: Int)], from sender: IdentityPublicKey)
        throws(StoreError) -> [(RefusalReason, [MessageID])]
    {
        try messageDriver.quota.judge(actions, from: sender).refused
    }

    /// The close text when incoming chats could not be judged or stored: the sender's
    /// messages stay queued there.
    static let uncountedCloseText = DirectMessageDriverCloseText.receiverStorageFailure

    /// A stranger or a correspondent, for the receive quota (`ReceiveQuotaDriver.standing`).
    func quotaStanding(of sender: IdentityPublicKey) -> ReceiveQuota.Standing {
        messageDriver.quota.standing(of: sender)
    }

    /// What the user can do about what was refused (`ReceiveQuotaDriver.remedy`).
    static func remedy(for reason: RefusalReason, standing: ReceiveQuota.Standing, peer: String) -> String {
        ReceiveQuotaDriver.remedy(for: reason, standing: standing, peer: peer)
    }

    /// Counts newly stored messages against the receive quota's cached usage.
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey) {
        messageDriver.quota.stored(bodies, from: sender)
    }

    /// Sends `refused` records, at most `WireLimits.maxAcksPerRecord` ids each.
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on conn: PeerConnection) {
        for (reason, ids) in refused {
            var start = 0
            while start < ids.count {
                let end = min(start + WireLimits.maxAcksPerRecord, ids.count)
                conn.send(.refused(reason, Array(ids[start..<end])))
                start = end
            }
        }
    }

    // MARK: Sending

    /// The peer refused to store these of our messages: they are no longer in flight (the
    /// window's slots are free), stay queued, and the refusal is recorded and reported.
    func connection(_ conn: PeerConnection, refused ids: [MessageID], reason: RefusalReason) {
        guard let peer = activePeer(of: conn) else { return }
        let left = sessionDriver.links[ObjectIdentifier(conn)]?.window.refuse(ids)
        if let actions = left?.actionItems, !actions.isEmpty {
            // Our edits, deletes or reactions: they stay queued (not offered again on this
            // session), like refused chats; the peer has no room for more from us now.
            log.warning(
                "a peer refused to store our edits, deletes or reactions; they stay queued",
                ["peer": displayName(of: peer), "reason": reason.description, "count": "\(actions.count)"])
        }
        messageDriver.quota.refusedByPeer(ids, by: peer, reason: reason)
        pump(conn)
    }
}

extension Node: ReceiveQuotaHost {
    /// Free bytes for an unprivileged writer on the store's file system, or nil if unknown.
    func freeDiskBytes() -> Int? { ReceiveQuotaDriver.freeBytes(onFileSystemOf: store.path) }
}
