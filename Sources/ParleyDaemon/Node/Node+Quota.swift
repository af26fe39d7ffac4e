import ParleyCore
import ParleyNodeCore
import ParleyStore

#if canImport(Glibc)
    import Glibc
#endif

/// What the node keeps from peers (issue 15): incoming chats are judged by `ReceiveQuota`
/// before they are stored; the ones over a quota, or arriving while the disk is under its
/// floor, are answered with a `refused` record instead of an ack (docs/PROTOCOL.md
/// "refused"). At the sender, a refusal frees the message's place in the send window and
/// is recorded; the message stays queued for the next session.
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
        let (verdicts, refused) = try quotaVerdicts(chats.map { ($0.id, $0.body.utf8.count) }, from: sender)
        return (zip(chats, verdicts).filter { $0.1 == nil }.map(\.0), refused)
    }

    /// The same for room chats (counted against their author's quota like direct ones).
    /// Throws when the store cannot count: the caller stores none of them and closes the
    /// session they came on (the rest stays queued at the sender).
    func judgeByQuota(_ chats: [RoomChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [RoomChatRecord], refused: [(RefusalReason, [MessageID])])
    {
        let (verdicts, refused) = try quotaVerdicts(chats.map { ($0.id, $0.body.utf8.count) }, from: sender)
        return (zip(chats, verdicts).filter { $0.1 == nil }.map(\.0), refused)
    }

    /// The close text when incoming chats could not be judged or stored: the sender's
    /// messages stay queued there.
    static let uncountedCloseText = DirectMessageDriverCloseText.receiverStorageFailure

    /// For each (id, body size) of one read: nil to store it, or why not; and the refused
    /// ids grouped by reason. Throws (after logging) when the store cannot count.
    private func quotaVerdicts(_ chats: [(id: MessageID, size: Int)], from sender: IdentityPublicKey)
        throws(StoreError) -> ([RefusalReason?], [(RefusalReason, [MessageID])])
    {
        guard !chats.isEmpty else { return ([], []) }
        let peerUsage: ReceiveQuota.Usage
        let totalUsage: ReceiveQuota.Usage
        let strangersUsage: ReceiveQuota.Usage
        let quota = messageDriver.quota
        let standing = quota.standing(of: sender)
        do {
            (peerUsage, totalUsage) = try quota.usage(of: sender)
            strangersUsage = standing == .stranger ? try quota.strangersUsage() : .init()
        } catch {
            // Not measurable: nothing is taken on a count nobody could make (a failed count
            // is not "nothing stored"); they stay queued at the sender.
            log.error(
                "could not count what is stored from a peer; its messages are not taken now",
                ["peer": displayName(of: sender), "error": "\(error)"])
            throw error
        }
        let free = freeDiskBytes()
        let now = clock.monotonicNow()
        // Decided on a copy of the strangers' rate: only the final verdicts take from it.
        var intake = quota.strangerIntake(now: now)
        var trial = intake
        var verdicts = options.quota.decide(
            bodySizes: chats.map(\.size), peer: peerUsage, total: totalUsage, strangers: strangersUsage,
            sender: standing, freeDiskBytes: free, intake: &trial, now: now)
        if verdicts.contains(where: { $0 != nil }) {
            // Refuse only what we do not already have: a resent stored message is acked.
            // A store that cannot tell leaves them refused (the sender sends them again).
            let known = (try? store.storedIncomingIDs(chats.map(\.id), from: sender)) ?? []
            if !known.isEmpty {
                let fresh = chats.indices.filter { !known.contains(chats[$0].id) }
                trial = intake
                let again = options.quota.decide(
                    bodySizes: fresh.map { chats[$0].size }, peer: peerUsage, total: totalUsage,
                    strangers: strangersUsage, sender: standing, freeDiskBytes: free, intake: &trial, now: now)
                verdicts = [RefusalReason?](repeating: nil, count: chats.count)
                for (k, i) in fresh.enumerated() { verdicts[i] = again[k] }
            }
        }
        intake = trial
        quota.strangerIntakeTaken(intake)
        var refused: [RefusalReason: [MessageID]] = [:]
        for (chat, verdict) in zip(chats, verdicts) {
            if let reason = verdict { refused[reason, default: []].append(chat.id) }
        }
        for (reason, ids) in refused {
            attackLog.log(
                key: "quota:" + sender.hex, "incoming messages refused: over the receive quota",
                [
                    "peer": displayName(of: sender), "reason": "\(reason)", "count": "\(ids.count)",
                    "next": Self.remedy(for: reason, standing: standing, peer: displayName(of: sender))
                ])
        }
        return (verdicts, refused.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key, $0.value) })
    }

    /// A stranger or a correspondent, for the receive quota (`ReceiveQuotaDriver.standing`).
    func quotaStanding(of sender: IdentityPublicKey) -> ReceiveQuota.Standing {
        messageDriver.quota.standing(of: sender)
    }

    /// What the user can do about what was refused, each safe to follow. Never "verify it"
    /// or "write to it" for a stranger (issue 29, L1): either makes it a correspondent (a
    /// larger allowance, its files taken in), and a key that sent a lot is the last one to
    /// trust for that. A stranger's refused messages stay queued at the sender, so nothing
    /// is lost by waiting; blocking stops it; deleting messages frees their place (the
    /// sender still has the refused ones queued, and acknowledged ones are never sent
    /// again); a raised limit is bounded by the config's ranges and the disk floor stays.
    static func remedy(for reason: RefusalReason, standing: ReceiveQuota.Standing, peer: String) -> String {
        switch reason {
        case .peerQuota where standing == .stranger, .strangersShare:
            "nothing is lost: the sender keeps the refused messages queued. A key you have not verified "
                + "sent more than strangers may store; if you do not know it, block it (parley trust block "
                + "\(peer)); if you think you know who it is, ask them in person, not through this key"
        case .peerQuota, .unknown:
            "delete old messages with the peer (parley export, then parley forget-messages \(peer)) or raise "
                + "quota_verified_peer_messages / quota_verified_peer_mib in parleyd.toml"
        case .nodeQuota:
            "delete old conversations (parley export, then parley forget-messages PEER) or raise "
                + "quota_total_messages / quota_total_mib in parleyd.toml"
        case .diskFull:
            "free disk space on the state directory's file system (or lower disk_floor_mib in parleyd.toml)"
        }
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

    /// Free bytes for an unprivileged writer on the store's file system, or nil if unknown.
    func freeDiskBytes() -> Int? {
        var s = statvfs()
        let directory = String(store.path[..<(store.path.lastIndex(of: "/") ?? store.path.endIndex)])
        guard statvfs(directory.isEmpty ? "." : directory, &s) == 0 else { return nil }
        return Int(clamping: UInt64(s.f_bavail) &* UInt64(s.f_frsize))
    }

    // MARK: Sending

    /// The peer refused to store these of our messages: they are no longer in flight (the
    /// window's slots are free), stay queued, and the refusal is recorded and reported.
    func connection(_ conn: PeerConnection, refused ids: [MessageID], reason: RefusalReason) {
        guard let peer = activePeer(of: conn) else { return }
        _ = sessionDriver.links[ObjectIdentifier(conn)]?.window.acknowledge(ids)
        do {
            let refusedMessages = try store.recordRefusal(
                ids: ids, by: peer, reason: Int(reason.rawValue), at: nowMs)
            for m in refusedMessages { emit(.messageRefused(m, reason)) }
            if !refusedMessages.isEmpty {
                log.warning(
                    "a peer refused to store our messages; they stay queued",
                    [
                        "peer": displayName(of: peer), "reason": reason.description,
                        "count": "\(refusedMessages.count)"
                    ])
            }
        } catch {
            log.error("could not record a refusal", ["error": "\(error)"])
        }
        pump(conn)
    }
}
