import ParleyCore
import ParleyNodeCore
import ParleyStore

/// A session's room records, in the order the peer sent them (an operation that makes the
/// sender a member is applied before its first message to the room); room messages
/// taken, held or refused as `RoomDistribution.messageVerdict` says; acknowledgements;
/// the two room lanes of the pump.
extension RoomDriver {
    /// The room records of one read from `link`'s session.
    func received(_ records: [RoomTraffic], on link: Link) {
        guard let host, let sender = host.activePeer(of: link) else { return }
        // Room chats count against their author's receive quota like direct ones (issue 15):
        // what is over it is refused, not stored; operations are bounded by the room limits.
        var records = records
        // A message already held from this author was judged (and took from the strangers'
        // rate) when it was first held: its resends while held (it is not acknowledged, so
        // the author's window sends it again after each ack timeout) are not judged again,
        // nor is an id repeated within the read.
        var judged = Set(book.heldChats.held(from: sender).map(\.id))
        let roomChats = records.compactMap {
            if case .chat(let c) = $0, judged.insert(c.id).inserted { c } else { nil }
        }
        if !roomChats.isEmpty {
            let refused: [(RefusalReason, [MessageID])]
            do { (_, refused) = try host.judgeByQuota(roomChats, from: sender) } catch {
                // Not counted, so none is taken: nothing of this read is stored or
                // acknowledged; the sender keeps it queued for the next session.
                link.close(reason: .normal, text: DirectMessageDriverCloseText.receiverStorageFailure)
                return
            }
            if !refused.isEmpty {
                let out = Set(refused.flatMap(\.1))
                records.removeAll { if case .chat(let c) = $0 { out.contains(c.id) } else { false } }
                host.sendRefusals(refused, on: link)
            }
        }
        var acks: [MessageID] = []
        var chats: [RoomChatRecord] = []
        var received: [StoredMessage] = []
        // Signed messages passed on by a member count against their author's quota (done
        // as each is stored), not the member's that handed them over.
        var receivedSigned: [StoredMessage] = []
        // Consecutive signed messages are stored together (two transactions per run).
        var signed: [RoomMessageArrival] = []
        func storeSigned(_ pending: inout [RoomMessageArrival]) throws(StoreError) {
            guard !pending.isEmpty else { return }
            defer { pending.removeAll() }
            let outcome = try host.receivedSignedRoomMessages(pending, from: sender, on: link)
            acks += outcome.acks
            receivedSigned += outcome.shown
        }
        var failed = false
        do {
            for record in records {
                switch record {
                case .operation(let op):
                    try storeChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    try accept(op, from: sender)
                    acks.append(op.hash.ackID)
                case .chat(let c):
                    try storeSigned(&signed)
                    chats.append(c)
                case .signed(let arrival):
                    try storeChats(&chats, from: sender, acks: &acks, received: &received)
                    signed.append(arrival)
                case .have(let have):
                    try storeChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    host.receivedRoomHave(have, from: sender)
                case .card(let card):
                    // After the operations before it: they may make its subject a member.
                    try storeChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    receivedCard(card, from: sender, on: link)
                case .operationsHave(let have):
                    try storeChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    try host.receivedRoomOperationsHave(have, from: sender, on: link)
                }
            }
            try storeChats(&chats, from: sender, acks: &acks, received: &received)
            try storeSigned(&signed)
        } catch {
            // What was stored is acknowledged and counted; the rest stays queued at the sender.
            log.error("could not store room traffic; it stays queued at the sender", ["error": "\(error)"])
            failed = true
        }
        link.sendAcks(acks)
        if failed { link.close(reason: .normal, text: DirectMessageDriverCloseText.receiverStorageFailure) }
        // Counted even when a later record failed: the receive quota's cached counts (which
        // also judge file offers) must not fall behind what the store holds.
        host.quotaStored(received.map { $0.body.utf8.count }, from: sender)
        if !received.isEmpty { host.promote(sender) }
        for m in received + receivedSigned { host.emit(.messageReceived(m)) }
    }

    /// Stores consecutive room chats (one transaction per room) whose author and this node
    /// are joined members in this node's view; holds, unacknowledged, those whose author is
    /// not known as one yet; acknowledges and drops those of a room this node is not in.
    private func storeChats(
        _ chats: inout [RoomChatRecord], from sender: IdentityPublicKey, acks: inout [MessageID],
        received: inout [StoredMessage]
    ) throws(StoreError) {
        guard !chats.isEmpty else { return }
        defer { chats.removeAll() }
        let now = nowMs
        var byRoom: [(RoomID, [RoomChatRecord])] = []
        for c in chats {
            if let i = byRoom.firstIndex(where: { $0.0 == c.roomID }) {
                byRoom[i].1.append(c)
            } else {
                byRoom.append((c.roomID, [c]))
            }
        }
        for (roomID, list) in byRoom {
            let state = try entry(roomID).state
            switch RoomDistribution.messageVerdict(in: state, from: sender, me: me) {
            case .accept:
                let incoming = list.map {
                    IncomingMessage(
                        id: $0.id, sender: sender, recipient: me,
                        sequence: Int64(clamping: $0.sequence), createdAt: Int64(clamping: $0.createdAt), body: $0.body,
                        replyTo: $0.replyTo)
                }
                let results = try store.storeIncomingRoomMessages(incoming, room: roomID, at: now)
                acks += list.map(\.id)
                received += results.filter(\.isNew).map(\.message)
            case .hold:
                let held = book.heldChats.hold(list, from: sender)
                // Once per author per interval: one line per read would let a removed member
                // (or any peer that names a room this node is in) write the log at will.
                heldLog.log(
                    key: sender.hex,
                    "room messages from an author not (yet) a member in this node's view are held, unacknowledged",
                    ["room": roomID.hex, "from": sender.fingerprintText, "held": "\(held)"])
            case .notForUs:
                // Acknowledged: this node left (or never joined) the room, so a resend would
                // change nothing; the author learns of it from the room's operations.
                host?.logAttack(
                    key: "room-chat:" + sender.hex + roomID.hex,
                    "room message for a room this node is not in; acknowledged and not stored",
                    ["room": roomID.hex, "from": sender.fingerprintText, "count": "\(list.count)"])
                acks += list.map(\.id)
            }
        }
    }

    /// After `room` changed: stores and acknowledges the held messages it now explains.
    func releaseHeldChats(room: RoomID) throws(StoreError) {
        guard let state = try entry(room).state else { return }
        let me = me
        let released = book.heldChats.release(room: room) {
            RoomDistribution.messageVerdict(in: state, from: $0, me: me) != .hold
        }
        for (sender, ready) in released {
            // Acknowledgements go on the author's session; with none, the author resends.
            guard let host, let link = host.activeConnection(for: sender) else { continue }
            var chats = ready
            var acks: [MessageID] = []
            var received: [StoredMessage] = []
            try storeChats(&chats, from: sender, acks: &acks, received: &received)
            link.sendAcks(acks)
            host.quotaStored(received.map { $0.body.utf8.count }, from: sender)
            if !received.isEmpty { host.promote(sender) }
            for m in received { host.emit(.messageReceived(m)) }
        }
    }

    /// `peer`'s session ended: the room messages held from it are dropped (none was
    /// acknowledged, so it sends them again on its next session), so an author that went
    /// away, or a key made up for one session, keeps no share of `HeldRoomChats`' bound.
    func sessionEnded(_ peer: IdentityPublicKey) {
        book.heldChats.drop(author: peer)
    }

    /// The room part of an acknowledgement: ids the window knew as room traffic, and ids it
    /// did not know at all (sent on an earlier session).
    func acknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard !ids.isEmpty, store.roomOutboxesMayHaveWork else { return }
        do {
            let change = try store.acknowledgeRoomTraffic(ids: ids, by: peer, at: nowMs)
            host?.roomDeliveryChanged(change)
        } catch {
            log.error("could not record room delivery; it will be sent again and de-duplicated", ["error": "\(error)"])
        }
    }

    /// Sends queued room operations to the peer of `link`, parents first, within the window.
    func pumpOperations(_ link: Link, peer: IdentityPublicKey) {
        guard let host, let free = host.withWindow(of: link, { $0.freeSlots }), free > 0 else { return }
        let pending: [StoredRoomOperation]
        do {
            pending = try store.pendingRoomOperations(
                to: peer, limit: (host.withWindow(of: link) { $0.count } ?? 0) + free)
        } catch {
            log.error("could not read the room operation outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for stored in pending {
            guard let free = host.withWindow(of: link, { $0.freeSlots }), free > 0 else { break }
            let ackID = stored.hash.ackID
            guard host.withWindow(of: link, { $0.isInFlight(ackID) }) == false else { continue }
            guard let op = try? RoomOperation.decode(stored.encoded) else {
                log.warning("stored room operation does not decode; dropped from the outbox", ["hash": stored.hash.hex])
                _ = try? store.acknowledgeRoomOperations(ackIDs: [ackID], by: peer)
                continue
            }
            // Policy bit 1 (history shared with new members) is read only by nodes with room
            // sync; an older node would take the operation for malformed and close the
            // session. It stays queued for that member until its node upgrades
            // (docs/PROTOCOL.md "Room operations").
            if Self.needsRoomSync(op), !link.remoteFeatures.contains(.roomSync) { continue }
            // The same for a capped remove (features bit 7): an older node cannot decode it
            // (docs/PROTOCOL.md "Removal caps").
            if op.removalCap != nil, !link.remoteFeatures.contains(.removalCaps) { continue }
            guard
                host.withWindow(
                    of: link, { $0.admit(ackID, bytes: stored.encoded.count, lane: .roomOperation, now: now) })
                    == true
            else { continue }
            link.send(.roomOperation(op))
            // Its actor's card after it (room cards): the receiver learns the name of a
            // member it may never have a session with.
            sendCard(of: op.actor, room: op.roomID, on: link, peer: peer)
        }
    }

    /// Sends queued room messages to the peer of `link`, in sequence order, within the window.
    func pumpMessages(_ link: Link, peer: IdentityPublicKey) {
        guard let host, link.isWritable, host.activePeer(of: link) != nil else { return }
        guard let free = host.withWindow(of: link, { $0.freeSlots }), free > 0 else { return }
        let pending: [StoredMessage]
        do {
            pending = try store.pendingRoomMessages(
                to: peer, limit: (host.withWindow(of: link) { $0.count } ?? 0) + free)
        } catch {
            log.error("could not read the room outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for m in pending {
            guard let free = host.withWindow(of: link, { $0.freeSlots }), free > 0 else { break }
            let mid = m.id
            guard let rid = m.room else { continue }
            guard
                host.withWindow(of: link, { $0.admit(mid, bytes: m.body.utf8.count, lane: .roomChat, now: now) })
                    == true
            else { continue }
            // A member that syncs rooms gets the signed form, which it may pass on.
            if link.remoteFeatures.contains(.roomSync), let signed = host.signedRoomMessageForSending(m, to: peer) {
                link.send(.roomMessage(.verified(signed)))
                continue
            }
            // A member whose node predates replies gets a plain room message.
            let replyTo = link.remoteFeatures.contains(.conversation) ? m.replyTo : nil
            link.send(
                .roomChat(
                    RoomChatRecord(
                        id: mid, roomID: rid, sequence: UInt64(max(0, m.sequence)),
                        createdAt: UInt64(max(0, m.createdAt)), body: m.body, replyTo: replyTo)))
        }
    }

    /// Whether `op` sets policy bits only nodes with room sync read (features bit 3).
    static func needsRoomSync(_ op: RoomOperation) -> Bool {
        switch op.change {
        case .create(_, _, let policy), .setPolicy(let policy): return policy.sharedHistory
        default: return false
        }
    }
}
