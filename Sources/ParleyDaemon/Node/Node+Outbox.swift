import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The durable outbox: local sends are stored, then pumped to the peer's session within
/// its `SendWindow`; incoming chats are stored, then acknowledged; acknowledgements mark
/// deliveries. docs/PROTOCOL.md, "Messages" and "Acknowledgements".
extension Node {
    // MARK: Pumping

    /// Sends what is queued for the peer of `conn`, within its window: room membership
    /// first, direct messages, then room messages (an operation that makes us a member
    /// reaches the peer before our first message to the room). `justQueued`: every direct
    /// message to this peer the session has not sent yet, as just stored (oldest first),
    /// when the caller knows them all; then they are not read back from the store.
    func pump(_ conn: PeerConnection, justQueued: [StoredMessage]? = nil) {
        guard conn.isWritable, let peer = activePeer(of: conn) else { return }
        // The room outboxes are skipped while the store knows them to be empty.
        let roomWork = store.roomOutboxesMayHaveWork
        if roomWork { pumpRoomOperations(conn, peer: peer) }
        defer { if roomWork { pumpRoomMessages(conn, peer: peer) } }
        // Edits, deletes and reactions after the direct messages they may name.
        defer { pumpActions(conn, peer: peer) }
        let handle = ObjectIdentifier(conn)
        guard let window = sessionDriver.links[handle]?.window, window.freeSlots > 0,
            messageDriver.outbox.mayHaveUnsent(for: peer, sentThrough: window.directSentThrough)
        else { return }
        var pending: [StoredMessage] = []
        if let justQueued {
            for m in justQueued where m.sequence > window.directSentThrough {
                guard pending.count < window.freeSlots else { break }
                pending.append(m)
            }
        } else {
            do {
                pending = try store.pendingOutgoing(
                    to: peer, afterSequence: window.directSentThrough,
                    limit: window.freeSlots)
            } catch {
                log.error("could not read the outbox", ["error": "\(error)"])
                return
            }
        }
        let now = clock.monotonicNow()
        for m in pending {
            let id = m.id
            guard
                sessionDriver.links[handle]?.window.admit(
                    id, bytes: m.body.utf8.count, lane: .direct, sequence: m.sequence,
                    now: now) == true
            else {
                if sessionDriver.links[handle]?.window.freeSlots == 0 { break }
                continue
            }
            // A peer that predates replies gets the reply as a plain chat (it would skip 0x09).
            let replyTo = conn.remoteFeatures.contains(.conversation) ? m.replyTo : nil
            conn.send(
                .chat(
                    ChatRecord(
                        id: id, sequence: UInt64(max(0, m.sequence)),
                        createdAt: UInt64(max(0, m.createdAt)), body: m.body, replyTo: replyTo)))
        }
    }

    func connectionBecameWritable(_ conn: PeerConnection) {
        pump(conn)
        pumpFiles(conn)
    }

    // MARK: Local sends

    /// Queues a message durably; returns once it is on disk.
    func send(to peer: PeerRecord, body: String) throws(NodeError) -> StoredMessage {
        try sendMany([(peer, body)])[0].get()
    }

    /// Queues several messages in ONE transaction (one fsync): a pipelining client's
    /// requests from one read are committed together, and each is answered only after
    /// that commit. Invalid ones fail alone; a storage failure fails all of them.
    func sendMany(_ items: [(PeerRecord, String)], replyTo: MessageID? = nil) -> [Result<StoredMessage, NodeError>] {
        loop.preconditionInEventLoop()
        var results = [Result<StoredMessage, NodeError>?](repeating: nil, count: items.count)
        var batch: [NewOutgoingMessage] = []
        var batchIndex: [Int] = []
        if messageDriver.outbox.needsCounts, let counts = try? store.pendingRecipients() {
            messageDriver.outbox.loadCounts(
                Dictionary(
                    counts.map { ($0.key, $0.value) },
                    uniquingKeysWith: +))
        }
        var planned: [IdentityPublicKey: Int] = [:]
        let now = nowMs
        for (i, (peer, body)) in items.enumerated() {
            let size = body.utf8.count
            if size == 0 {
                results[i] = .failure(.emptyBody)
                continue
            }
            if size > WireLimits.maxBodyBytes {
                results[i] = .failure(.bodyTooLarge(size))
                continue
            }
            if let refusal = sendRefusal(peer) {
                results[i] = .failure(refusal)
                continue
            }
            let key = peer.identity
            if messageDriver.outbox.queuedCount(for: key) + planned[key, default: 0] >= NodeLimits.maxQueuedPerPeer {
                results[i] = .failure(.queueFull(peer, NodeLimits.maxQueuedPerPeer))
                continue
            }
            planned[key, default: 0] += 1
            batch.append(
                NewOutgoingMessage(
                    id: MessageID.random(), recipient: key, body: body, createdAt: now,
                    replyTo: replyTo))
            batchIndex.append(i)
        }
        if !batch.isEmpty {
            // Sessions that had sent everything queued to their peer: after this batch, its
            // rows are all that peer's unsent messages, so the pump takes them as stored
            // instead of reading them back (`OutboxLedger.mayHaveUnsent`).
            var caughtUp: Set<IdentityPublicKey> = []
            for peer in planned.keys {
                if let conn = activeConnection(for: peer),
                    let window = sessionDriver.links[ObjectIdentifier(conn)]?.window,
                    !messageDriver.outbox.mayHaveUnsent(for: peer, sentThrough: window.directSentThrough)
                {
                    caughtUp.insert(peer)
                }
            }
            do {
                let stored = try store.enqueue(batch, sender: myIdentityKey)
                for (k, m) in stored.enumerated() where k < batchIndex.count { results[batchIndex[k]] = .success(m) }
                var newest: [IdentityPublicKey: Int64] = [:]
                for m in stored {
                    if let key = m.recipient.peerKey {
                        newest[key] = max(newest[key] ?? m.sequence, m.sequence)
                    }
                }
                for (peer, n) in planned {
                    messageDriver.outbox.queued(n, for: peer, newestSequence: newest[peer] ?? 0)
                }
                // Written to for the first time: a contact now, and gossip starts on the
                // session already up (`GossipDriver.wroteTo`).
                for peer in planned.keys where gossipDriver.wroteTo(peer) {
                    if let conn = activeConnection(for: peer) { startGossip(on: conn, peer: peer) }
                }
                let byRecipient = caughtUp.isEmpty ? [:] : Dictionary(grouping: stored, by: \StoredMessage.recipient)
                for peer in planned.keys {
                    guard let conn = activeConnection(for: peer) else { continue }
                    pump(conn, justQueued: caughtUp.contains(peer) ? byRecipient[.peer(peer)] ?? [] : nil)
                }
            } catch {
                for i in batchIndex { results[i] = .failure(.storage(error)) }
            }
        }
        return results.map { $0 ?? .failure(.storage(.io(path: store.path, reason: "not stored"))) }
    }

    // MARK: Wire

    func connection(_ conn: PeerConnection, received chats: [ChatRecord]) {
        guard let sender = activePeer(of: conn) else { return }
        let now = nowMs
        // The receive quota and the disk floor first: what is over them is refused, not
        // stored (the sender keeps it queued).
        let (chats, refused) = judgeByQuota(chats, from: sender)
        sendRefusals(refused, on: conn)
        guard !chats.isEmpty else { return }
        sessionDriver.table.promote(sender)  // no longer a stranger (SessionTable's eviction order)
        let incoming = chats.map {
            ReceivedChat(
                id: $0.id, sequence: Int64(clamping: $0.sequence), createdAt: Int64(clamping: $0.createdAt),
                body: $0.body, replyTo: $0.replyTo)
        }
        let results: [(message: StoredMessage, isNew: Bool)]
        do {
            // The message.received events commit with the messages (one transaction).
            results = try store.storeIncoming(
                incoming, from: sender, to: myIdentityKey, at: now,
                journal: messageJournal(ControlEvent.messageReceived))
        } catch {
            // Not stored, so not acknowledged: the sender keeps them queued and resends.
            log.error("could not store incoming messages; they stay queued at the sender", ["error": "\(error)"])
            conn.close(reason: .normal, text: "receiver storage failure")
            return
        }
        // Acknowledged once on disk: with group commit the transaction above returns before
        // its sync (Store+GroupCommit.swift), and an ack stops the sender's retries.
        let ids = chats.map(\.id)
        store.whenDurable { [weak self, weak conn] in
            guard let self, let conn else { return }
            self.sendAcks(ids, on: conn)
        }
        quotaStored(results.filter(\.isNew).map { $0.message.body.utf8.count }, from: sender)
        for r in results where r.isNew { emit(.messageReceived(r.message)) }
    }

    /// Acknowledges stored records, at most `WireLimits.maxAcksPerRecord` ids per ack record.
    func sendAcks(_ ids: [MessageID], on conn: PeerConnection) {
        var start = 0
        while start < ids.count {
            let end = min(start + WireLimits.maxAcksPerRecord, ids.count)
            conn.send(.ack(Array(ids[start..<end])))
            start = end
        }
    }

    func connection(_ conn: PeerConnection, acknowledged ids: [MessageID]) {
        guard let peer = conn.remoteIdentityKey else { return }
        let ack =
            sessionDriver.links[ObjectIdentifier(conn)]?.window.acknowledge(ids)
            ?? SendWindow.Acknowledgement(unknown: ids)
        do {
            let changed = try store.markDelivered(
                ids, by: peer, at: nowMs, journal: messageJournal(ControlEvent.messageDelivered))
            if !changed.isEmpty { sessionDriver.table.promote(peer) }
            messageDriver.outbox.delivered(changed.count, by: peer)
            for m in changed { emit(.messageDelivered(m)) }
        } catch {
            log.error(
                "could not record delivery; the messages will be sent again and de-duplicated", ["error": "\(error)"])
        }
        actionsAcknowledged(ack.actionItems + ack.unknown, by: peer)
        roomTrafficAcknowledged(ack.roomItems + ack.unknown, by: peer)
        roomSyncAcknowledged(ids, by: peer)
        pump(conn)
    }
}
