import ParleyCore
import ParleyNodeCore
import ParleyStore

/// This node's own room messages and changes as sync sees them: who gets a new message
/// directly (`RoomFanOut`), signing (messages, and edits, deletes and reactions in rooms),
/// the signed form sent to a member that syncs (remembered until its acknowledgement), and
/// the delivery events when members hold them.
extension RoomSyncDriver {
    /// The members this node queues its new room message for (`RoomFanOut`): those not
    /// known to sync rooms all, and a few of those that do, online ones first. Before any
    /// other member has joined, the invited ones, chosen the same way: the message was
    /// written for them and waits for them (its delivery state stays `queued` until they
    /// hold it, not "delivered" to nobody); it is sent to each once it joined
    /// (`Store.pendingRoomMessages`).
    func messageRecipients(_ state: RoomState) -> [IdentityPublicKey] {
        let joined = fanOut(among: state.joined)
        guard joined.isEmpty else { return joined }
        return fanOut(among: state.members.filter(state.isInvited))
    }

    private func fanOut(among candidates: [IdentityPublicKey]) -> [IdentityPublicKey] {
        var online: Set<IdentityPublicKey> = []
        for m in candidates where m != me {
            if let link = host?.activeConnection(for: m), link.remoteFeatures.contains(.roomSync) { online.insert(m) }
        }
        var rng = SystemRandomNumberGenerator()
        return RoomFanOut.messageRecipients(
            joined: candidates, me: me, syncing: knownSyncingPeers(), online: online, using: &rng)
    }

    /// Signs this node's room message (`sequence`: the next of its own in the room; anchor:
    /// the room's heads), to be stored with it. Nil if that fails: the message then goes to
    /// members as an unsigned roomChat.
    func signMessage(
        id: MessageID, room: RoomID, sequence: UInt64, state: RoomState, body: String, createdAt: Int64,
        replyTo: MessageID?
    ) -> SignedRoomMessage? {
        do {
            return try SignedRoomMessage.sign(
                roomID: room, roomSequence: sequence, id: id, createdAt: UInt64(max(0, createdAt)),
                anchor: state.heads.map(\.hash), replyTo: replyTo, body: body, by: identity)
        } catch {
            log.error("could not sign a room message; it goes to members unsigned", ["error": "\(error)"])
            return nil
        }
    }

    /// This node's signed message is stored and queued for `recipients`: sync relays it to
    /// a few others (`RoomSyncStateMachine.stored`), never to those.
    func storedOwn(_ m: SignedRoomMessage, queuedFor recipients: [IdentityPublicKey]) {
        let now = clock.monotonicNow()
        let me = self.me
        withSync {
            $0.stored(
                room: m.roomID, author: me, sequence: m.roomSequence, from: nil, now: now,
                queuedFor: Set(recipients))
        }
    }

    /// Signs this node's edit, delete or reaction of a room message (the next sequence of its
    /// own in the room, the room's heads as anchor) with the id of the queued action, and
    /// keeps it signed, so members can pass it on. After the action is queued.
    func signChange(_ action: MessageActionRecord.Action, of target: MessageID, id: MessageID, room: RoomID) {
        do {
            guard let state = try host?.roomForSync(room).state else { return }
            let sequence = try store.nextRoomSequence(room: room, author: me)
            let signed = try SignedRoomMessage.signChange(
                action, of: target, roomID: room, roomSequence: sequence, id: id, createdAt: UInt64(max(0, nowMs)),
                anchor: state.heads.map(\.hash), by: identity)
            _ = try store.insertSignedRoomMessage(
                room: room, author: me, sequence: sequence, id: id, encoded: signed.encoded(), at: nowMs)
            let now = clock.monotonicNow()
            let me = self.me
            withSync { $0.stored(room: room, author: me, sequence: sequence, from: nil, now: now) }
        } catch {
            log.error("could not sign a room change; it goes to members unsigned", ["error": "\(error)"])
        }
    }

    /// The signed form of a room change this node made, for a member that syncs rooms;
    /// remembered as sent so its acknowledgement tells sync the member holds it.
    func signedChangeForSending(id: MessageID, to peer: IdentityPublicKey, on link: Link) -> SignedRoomMessage? {
        guard link.remoteFeatures.contains(.roomSync),
            let bytes = try? store.signedRoomMessage(id: id, author: me),
            let signed = try? SignedRoomMessage.decode(bytes), signed.kind.isChange
        else { return nil }
        book.pushed[peer, default: [:]][signed.id] = (signed.roomID, signed.author, signed.roomSequence)
        return signed
    }

    /// The signed form of a room message this node wrote, for a member that syncs rooms;
    /// remembered as sent so its acknowledgement tells sync the member holds it.
    func signedMessageForSending(_ m: StoredMessage, to peer: IdentityPublicKey) -> SignedRoomMessage? {
        guard m.sender == me, let bytes = try? store.signedRoomMessage(id: m.id, author: me),
            let signed = try? SignedRoomMessage.decode(bytes)
        else { return nil }
        book.pushed[peer, default: [:]][signed.id] = (signed.roomID, signed.author, signed.roomSequence)
        return signed
    }

    /// Members newly hold some of this node's room messages: `message.delivered` for those
    /// every member now holds, `message.updated` (its `roomDelivery` grew) for the others.
    func deliveryChanged(_ change: RoomDeliveryChange) {
        for m in change.delivered { host?.emit(.messageDelivered(DeliveredMessage(m))) }
        for m in change.held { host?.emit(.messageUpdated(m)) }
    }
}
