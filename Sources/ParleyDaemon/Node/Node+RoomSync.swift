import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Room sync on the node (issue 30; docs/PROTOCOL.md "Room sync" and "Operation
/// summaries") is `RoomSyncDriver`'s (Drivers/RoomSync): it owns the sync state and is the
/// one performer of `RoomSyncStateMachine.Action`. The node routes to it, under the names
/// the rest of the node calls, and is its host (`RoomSyncHost`). What is not sync's but
/// happens at its events stays here: room cards at the end of a session, and address
/// gossip among co-members when a membership changes.
extension Node {
    /// The room sync driver (held by `RoomBook`; the node holds no sync state itself).
    var roomSync: RoomSyncDriver<Node> { roomBook.sync }

    // MARK: Members reach each other

    /// The joined members of each room this node has joined (its own view).
    func joinedRoomMembers() -> [Set<IdentityPublicKey>] { roomSync.joinedRoomMembers() }

    /// Whether `identity` is a joined member of a room this node has joined: co-members'
    /// signed address records are kept and passed between co-members (docs/PROTOCOL.md
    /// "Address gossip" and "Room sync"), so a room works without mDNS or `parley connect`.
    func isCoMember(_ identity: IdentityPublicKey) -> Bool { roomSync.isCoMember(identity) }

    // MARK: Events

    /// A session is up: with a peer that syncs rooms, compare every room both have joined.
    func roomSyncSessionStarted(_ conn: PeerConnection, peer: IdentityPublicKey) {
        roomSync.sessionStarted(conn, peer: peer)
    }

    /// Peers known to sync rooms: those seen with bit 3, in this run or an earlier one.
    func knownRoomSyncPeers() -> Set<IdentityPublicKey> { roomSync.knownSyncingPeers() }

    /// Peers known to compare operation summaries (bit 5), in this run or an earlier one.
    func knownSummarizingPeers() -> Set<IdentityPublicKey> { roomSync.knownSummarizingPeers() }

    /// `peer` announced (or no longer announces) room sync: kept, in memory and in the store.
    func noteRoomSyncPeer(_ peer: IdentityPublicKey, _ feature: RoomSyncFeature = .messages, syncing: Bool) {
        roomSync.notePeer(peer, feature, syncing: syncing)
    }

    func roomSyncSessionEnded(_ peer: IdentityPublicKey) {
        roomBook.cards.sessionEnded(peer)
        roomSync.sessionEnded(peer)
    }

    /// The room's membership changed: sync stops with members no longer joined at once;
    /// co-members reach each other.
    func roomSyncMembershipChanged(_ state: RoomState) {
        reconsiderHeldRoomCards()
        roomSync.membershipChanged(state)
        // Co-members reach each other: our own address record to the joined members we have
        // a session with (they relay it to the others), then what they may now learn.
        let me = myIdentityKey
        guard state.hasJoined(me) else { return }
        // A new co-member's record relayed before the operation that made it one arrived
        // (the record goes at once, the operation through the outbox): taken now.
        let taken = gossipDriver.gossip.reconsiderEarly(
            isContact: { [unowned self] in self.isContact($0) || self.isCoMember($0) }, nowMs: UInt64(max(0, nowMs)))
        for (record, from) in taken { learnedAddressRecord(record, from: from) }
        guard let own = ownAddressRecord() else {
            relayAddressRecords()
            return
        }
        for m in state.joined where m != me {
            guard let conn = activeConnection(for: m), conn.remoteFeatures.contains(.addressGossip) else { continue }
            conn.send(.addressRecord(own))
        }
        relayAddressRecords()
    }

    func roomSyncTick() { roomSync.tick() }

    /// The cap this node signs into a remove (`RoomSyncDriver.removalCapToSign`).
    func roomRemovalCapToSign(target: IdentityPublicKey, in state: RoomState) throws(StoreError) -> UInt64? {
        try roomSync.removalCapToSign(target: target, in: state)
    }

    /// Acknowledgements of signed messages this node sent (its own, or pushed).
    func roomSyncAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        roomSync.acknowledged(ids, by: peer)
    }

    // MARK: This node's own messages and changes

    /// The members this node queues its new room message for (`RoomFanOut`).
    func roomMessageRecipients(_ state: RoomState) -> [IdentityPublicKey] { roomSync.messageRecipients(state) }

    /// Signs this node's room message; nil if that fails (it then goes unsigned).
    func signRoomMessage(
        id: MessageID, room: RoomID, sequence: UInt64, state: RoomState, body: String, createdAt: Int64,
        replyTo: MessageID?
    ) -> SignedRoomMessage? {
        roomSync.signMessage(
            id: id, room: room, sequence: sequence, state: state, body: body, createdAt: createdAt, replyTo: replyTo)
    }

    /// This node's signed message is stored and queued for `recipients`.
    func roomSyncStoredOwn(_ m: SignedRoomMessage, queuedFor recipients: [IdentityPublicKey]) {
        roomSync.storedOwn(m, queuedFor: recipients)
    }

    /// Signs and keeps this node's edit, delete or reaction of a room message.
    func signRoomChange(_ action: MessageActionRecord.Action, of target: MessageID, id: MessageID, room: RoomID) {
        roomSync.signChange(action, of: target, id: id, room: room)
    }

    /// The signed form of a room change this node made, for a member that syncs rooms.
    func signedRoomChangeForSending(id: MessageID, to peer: IdentityPublicKey, on conn: PeerConnection)
        -> SignedRoomMessage?
    {
        roomSync.signedChangeForSending(id: id, to: peer, on: conn)
    }

    /// The signed form of a room message this node wrote, for a member that syncs rooms.
    func signedRoomMessageForSending(_ m: StoredMessage, to peer: IdentityPublicKey) -> SignedRoomMessage? {
        roomSync.signedMessageForSending(m, to: peer)
    }

    /// Members newly hold some of this node's room messages (`message.delivered`/`updated`).
    func roomDeliveryChanged(_ change: RoomDeliveryChange) { roomSync.deliveryChanged(change) }

    // MARK: Wire

    /// A summary from the session's peer (`RoomSyncDriver.receivedHave`).
    func receivedRoomHave(_ have: RoomHave, from peer: IdentityPublicKey) { roomSync.receivedHave(have, from: peer) }

    /// Signed room messages handed over by the session's peer, from one read
    /// (`RoomSyncDriver.receivedSignedMessages`): the ids to acknowledge, the messages shown.
    func receivedSignedRoomMessages(
        _ arrivals: [RoomMessageArrival], from peer: IdentityPublicKey, on conn: PeerConnection
    ) throws(StoreError) -> (acks: [MessageID], shown: [StoredMessage]) {
        try roomSync.receivedSignedMessages(arrivals, from: peer, on: conn)
    }

    // MARK: Operation summaries

    /// A member's heads of a room (`RoomSyncDriver.receivedOperationsHave`).
    func receivedRoomOperationsHave(_ have: RoomOperationsHave, from peer: IdentityPublicKey, on conn: PeerConnection)
        throws(StoreError)
    {
        try roomSync.receivedOperationsHave(have, from: peer, on: conn)
    }

    /// Narrows who a new operation is queued for (`RoomOperationFanOut`).
    func boundedOperationPlan(
        _ plan: RoomDistribution.OperationPlan, for op: RoomOperation, after: RoomState
    ) -> RoomDistribution.OperationPlan {
        roomSync.boundedOperationPlan(plan, for: op, after: after)
    }
}

// MARK: The host of room sync

extension Node: RoomSyncHost {
    func roomForSync(_ room: RoomID) throws(StoreError)
        -> (state: RoomState?, operations: [RoomOperationHash: RoomOperation])
    {
        let entry = try roomEntry(room)
        return (entry.state, entry.operations)
    }

    func roomMessageDeleted() { messageDriver.deleteApplied() }

    func authorStanding(_ author: IdentityPublicKey) -> KnownPeer.Standing? {
        peerRecord(author).map { PeerDirectory.knownPeer($0).standing }
    }
}
