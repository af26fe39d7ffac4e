import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Room sync on the node (issue 30; docs/PROTOCOL.md "Room sync"): signed room messages
/// that any member passes on to another, and the summaries members compare. The decisions
/// are `RoomSyncStateMachine`'s (what to announce and push) and `RoomEntitlement`'s (who may
/// have a message); this driver stores, verifies, sends and feeds them events. Its state is
/// `RoomSyncBook` (in `RoomBook`), not the node's.
extension Node {
    // MARK: State

    /// The sync state, with what the store holds loaded on first use.
    private func syncMachine() -> RoomSyncStateMachine {
        if !roomBook.sync.loaded {
            roomBook.sync.loaded = true
            do {
                var current: (RoomID, IdentityPublicKey)?
                var ranges = SequenceRanges()
                for row in try store.signedRoomMessageSequences() {
                    let (room, author) = (row.room, row.author)
                    if let c = current, c != (room, author) {
                        roomBook.sync.machine.load(room: c.0, author: c.1, ranges: ranges)
                        ranges = SequenceRanges()
                    }
                    current = (room, author)
                    ranges.insert(row.sequence)
                }
                if let c = current { roomBook.sync.machine.load(room: c.0, author: c.1, ranges: ranges) }
            } catch {
                log.error("could not load the signed room messages; sync starts empty", ["error": "\(error)"])
            }
        }
        return roomBook.sync.machine
    }

    private func withSync(_ body: (inout RoomSyncStateMachine) -> [RoomSyncStateMachine.Action]) {
        var machine = syncMachine()
        let actions = body(&machine)
        roomBook.sync.machine = machine
        performRoomSync(actions)
    }

    /// May `peer` have `author`'s message `sequence` of `room` (`RoomEntitlement`), judged
    /// on this node's resolved room and the message's signed anchor.
    private func syncEntitlement() -> RoomSyncStateMachine.Entitled {
        // One closure per batch of decisions: the room and the membership at each anchor are
        // computed once (a catch-up of thousands of messages names a handful of anchors).
        var entries: [RoomID: RoomBook.Entry] = [:]
        var folds: [[RoomOperationHash]: RoomFold?] = [:]
        return { [unowned self] room, author, sequence, peer in
            // This node's own messages are pushed like any other: its outbox holds them only
            // for the few members it sent them to itself (`RoomFanOut`); the others lack them
            // until a member (this one included) passes them on.
            if entries[room] == nil { entries[room] = try? self.roomEntry(room) }
            guard let entry = entries[room], let state = entry.state,
                let bytes = try? self.store.signedRoomMessages(room: room, author: author, sequences: [sequence]).first,
                let m = try? SignedRoomMessage.decode(bytes)
            else { return false }
            if folds[m.anchor] == nil {
                folds[m.anchor] = .some(
                    RoomEntitlement.membership(at: m.anchor, state: state, operations: entry.operations))
            }
            let then = folds[m.anchor] ?? nil
            return RoomEntitlement.verdict(author: author, membershipThen: then, for: peer, state: state) == .entitled
        }
    }

    // MARK: Members reach each other

    /// The joined members of each room this node has joined (its own view).
    func joinedRoomMembers() -> [Set<IdentityPublicKey>] {
        guard let rooms = try? store.rooms() else { return [] }
        return rooms.filter { $0.status == .joined }.map { Set($0.joined) }
    }

    /// Whether `identity` is a joined member of a room this node has joined: co-members'
    /// signed address records are kept and passed between co-members (docs/PROTOCOL.md
    /// "Address gossip" and "Room sync"), so a room works without mDNS or `parley connect`.
    func isCoMember(_ identity: IdentityPublicKey) -> Bool {
        identity != myIdentityKey && joinedRoomMembers().contains { $0.contains(identity) }
    }

    // MARK: Events

    /// A session is up: with a peer that syncs rooms, compare every room both have joined.
    func roomSyncSessionStarted(_ conn: PeerConnection, peer: IdentityPublicKey) {
        noteRoomSyncPeer(peer, .operations, syncing: conn.remoteFeatures.contains(.roomOperationSummaries))
        guard conn.remoteFeatures.contains(.roomSync) else {
            noteRoomSyncPeer(peer, syncing: false)
            return
        }
        noteRoomSyncPeer(peer, syncing: true)
        var shared: [RoomID] = []
        do {
            for r in try store.rooms() where r.status == .joined {
                guard let state = try roomEntry(r.id).state,
                    state.hasJoined(myIdentityKey), state.hasJoined(peer)
                else { continue }
                shared.append(r.id)
            }
        } catch {
            log.error("could not list rooms for sync", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        withSync { $0.sessionOpened(peer, sharedRooms: shared, now: now) }
    }

    /// Peers known to sync rooms: those seen with bit 3, in this run or an earlier one (the
    /// store keeps them, so after a restart the author still uses fan-out for them).
    func knownRoomSyncPeers() -> Set<IdentityPublicKey> {
        loadRoomSyncPeers()
        return roomBook.sync.syncing
    }

    /// Peers known to compare operation summaries (bit 5), in this run or an earlier one.
    func knownSummarizingPeers() -> Set<IdentityPublicKey> {
        loadRoomSyncPeers()
        return roomBook.sync.summarizing
    }

    private func loadRoomSyncPeers() {
        if !roomBook.sync.syncingLoaded {
            roomBook.sync.syncingLoaded = true
            do {
                let stored = try store.roomSyncPeers()
                roomBook.sync.syncing.formUnion(stored)
                let summarizing = try store.roomSyncPeers(.operations)
                roomBook.sync.summarizing.formUnion(summarizing)
            } catch {
                log.error(
                    "could not read the peers that sync rooms; they get room messages directly", ["error": "\(error)"])
            }
        }
    }

    /// `peer` announced (or no longer announces) room sync: kept, in memory and in the store.
    func noteRoomSyncPeer(_ peer: IdentityPublicKey, _ feature: RoomSyncFeature = .messages, syncing: Bool) {
        loadRoomSyncPeers()
        switch feature {
        case .messages:
            guard roomBook.sync.syncing.contains(peer) != syncing else { return }
            if syncing { roomBook.sync.syncing.insert(peer) } else { roomBook.sync.syncing.remove(peer) }
        case .operations:
            guard roomBook.sync.summarizing.contains(peer) != syncing else { return }
            if syncing { roomBook.sync.summarizing.insert(peer) } else { roomBook.sync.summarizing.remove(peer) }
        }
        do { try store.setRoomSyncPeer(peer, feature, syncing: syncing) } catch {
            log.warning(
                "could not keep whether a peer syncs rooms", ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }

    func roomSyncSessionEnded(_ peer: IdentityPublicKey) {
        roomBook.cards.sessionEnded(peer)
        roomBook.sync.summaryReplies[peer] = nil
        roomBook.sync.summariesRead[peer] = nil
        guard roomBook.sync.loaded else { return }
        roomBook.sync.machine.sessionClosed(peer)
        roomBook.sync.pushed[peer] = nil
    }

    /// The room's membership changed: sync stops with members no longer joined at once.
    func roomSyncMembershipChanged(_ state: RoomState) {
        reconsiderHeldRoomCards()
        let now = clock.monotonicNow()
        let me = myIdentityKey
        withSync { $0.membershipChanged(room: state.roomID, joined: Set(state.joined), me: me, now: now) }
        // Co-members reach each other: our own address record to the joined members we have
        // a session with (they relay it to the others), then what they may now learn.
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

    func roomSyncTick() {
        guard roomBook.sync.loaded else { return }
        let now = clock.monotonicNow()
        let entitled = syncEntitlement()
        withSync { $0.tick(now: now, entitled: entitled) }
    }

    /// Acknowledgements of signed messages this node sent (its own, or pushed).
    func roomSyncAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard roomBook.sync.loaded, var sent = roomBook.sync.pushed[peer], !sent.isEmpty else { return }
        var done: [(RoomID, IdentityPublicKey, UInt64)] = []
        for id in ids { if let s = sent.removeValue(forKey: id) { done.append(s) } }
        roomBook.sync.pushed[peer] = sent
        guard !done.isEmpty else { return }
        let entitled = syncEntitlement()
        withSync { m in
            done.flatMap { m.acknowledged(room: $0.0, author: $0.1, sequence: $0.2, by: peer, entitled: entitled) }
        }
    }

    /// The members this node queues its new room message for (`RoomFanOut`): those not
    /// known to sync rooms all, and a few of those that do, online ones first. Before any
    /// other member has joined, the invited ones, chosen the same way: the message was
    /// written for them and waits for them (its delivery state stays `queued` until they
    /// hold it, not "delivered" to nobody); it is sent to each once it joined
    /// (`Store.pendingRoomMessages`).
    func roomMessageRecipients(_ state: RoomState) -> [IdentityPublicKey] {
        let joined = roomFanOut(among: state.joined)
        guard joined.isEmpty else { return joined }
        return roomFanOut(among: state.members.filter(state.isInvited))
    }

    private func roomFanOut(among candidates: [IdentityPublicKey]) -> [IdentityPublicKey] {
        var online: Set<IdentityPublicKey> = []
        for m in candidates where m != myIdentityKey {
            if let conn = activeConnection(for: m), conn.remoteFeatures.contains(.roomSync) { online.insert(m) }
        }
        var rng = SystemRandomNumberGenerator()
        return RoomFanOut.messageRecipients(
            joined: candidates, me: myIdentityKey, syncing: knownRoomSyncPeers(), online: online, using: &rng)
    }

    /// Signs this node's room message (`sequence`: the next of its own in the room; anchor:
    /// the room's heads), to be stored with it. Nil if that fails: the message then goes to
    /// members as an unsigned roomChat.
    func signRoomMessage(
        id: MessageID, room: RoomID, sequence: UInt64, state: RoomState, body: String, createdAt: Int64,
        replyTo: MessageID?
    ) -> SignedRoomMessage? {
        do {
            return try SignedRoomMessage.sign(
                roomID: room, roomSequence: sequence, id: id, createdAt: UInt64(max(0, createdAt)),
                anchor: state.heads.map(\.hash), replyTo: replyTo, body: body, by: ownIdentity.keys.identity)
        } catch {
            log.error("could not sign a room message; it goes to members unsigned", ["error": "\(error)"])
            return nil
        }
    }

    /// This node's signed message is stored and queued for `recipients`: sync relays it to
    /// a few others (`RoomSyncStateMachine.stored`), never to those.
    func roomSyncStoredOwn(_ m: SignedRoomMessage, queuedFor recipients: [IdentityPublicKey]) {
        let now = clock.monotonicNow()
        let me = myIdentityKey
        withSync {
            $0.stored(
                room: m.roomID, author: me, sequence: m.roomSequence, from: nil, now: now,
                queuedFor: Set(recipients))
        }
    }

    /// Signs this node's edit, delete or reaction of a room message (the next sequence of its
    /// own in the room, the room's heads as anchor) with the id of the queued action, and
    /// keeps it signed, so members can pass it on. After the action is queued.
    func signRoomChange(_ action: MessageActionRecord.Action, of target: MessageID, id: MessageID, room: RoomID) {
        do {
            guard let state = try roomEntry(room).state else { return }
            let sequence = try store.nextRoomSequence(room: room, author: myIdentityKey)
            let signed = try SignedRoomMessage.signChange(
                action, of: target, roomID: room, roomSequence: sequence, id: id, createdAt: UInt64(max(0, nowMs)),
                anchor: state.heads.map(\.hash), by: ownIdentity.keys.identity)
            _ = try store.insertSignedRoomMessage(
                room: room, author: myIdentityKey, sequence: sequence, id: id, encoded: signed.encoded(),
                at: nowMs)
            let now = clock.monotonicNow()
            let me = myIdentityKey
            withSync { $0.stored(room: room, author: me, sequence: sequence, from: nil, now: now) }
        } catch {
            log.error("could not sign a room change; it goes to members unsigned", ["error": "\(error)"])
        }
    }

    /// The signed form of a room change this node made, for a member that syncs rooms.
    func signedRoomChangeForSending(id: MessageID, to peer: IdentityPublicKey, on conn: PeerConnection)
        -> SignedRoomMessage?
    {
        guard conn.remoteFeatures.contains(.roomSync),
            let bytes = try? store.signedRoomMessage(id: id, author: myIdentityKey),
            let signed = try? SignedRoomMessage.decode(bytes), signed.kind.isChange
        else { return nil }
        roomBook.sync.pushed[peer, default: [:]][signed.id] = (signed.roomID, signed.author, signed.roomSequence)
        return signed
    }

    /// The signed form of a room message this node wrote, for a member that syncs rooms;
    /// remembered as sent so its acknowledgement tells sync the member holds it.
    func signedRoomMessageForSending(_ m: StoredMessage, to peer: IdentityPublicKey) -> SignedRoomMessage? {
        guard m.sender == myIdentityKey, let bytes = try? store.signedRoomMessage(id: m.id, author: myIdentityKey),
            let signed = try? SignedRoomMessage.decode(bytes)
        else { return nil }
        roomBook.sync.pushed[peer, default: [:]][signed.id] = (signed.roomID, signed.author, signed.roomSequence)
        return signed
    }

    /// Members newly hold some of this node's room messages: `message.delivered` for those
    /// every member now holds, `message.updated` (its `roomDelivery` grew) for the others.
    func roomDeliveryChanged(_ change: RoomDeliveryChange) {
        for m in change.delivered { emit(.messageDelivered(DeliveredMessage(m))) }
        for m in change.held { emit(.messageUpdated(m)) }
    }

    // MARK: Wire

    /// A summary from the session's peer: push what it lacks and may have. What it lists of
    /// this node's own messages is held by it (delivery state: it may have them from another
    /// member), so they stop being queued for it.
    func receivedRoomHave(_ have: RoomHave, from peer: IdentityPublicKey) {
        log.debug(
            "room summary received",
            ["room": have.roomID.hex, "from": peer.fingerprintText, "authors": "\(have.authors.count)"])
        if let mine = have.authors[myIdentityKey], !mine.ranges.isEmpty, store.roomOutboxesMayHaveWork {
            do {
                roomDeliveryChanged(
                    try store.markRoomMessagesHeld(
                        room: have.roomID, author: myIdentityKey, ranges: mine.ranges, by: peer, at: nowMs))
            } catch {
                log.error("could not record what a member's summary holds", ["error": "\(error)"])
            }
        }
        let now = clock.monotonicNow()
        let entitled = syncEntitlement()
        withSync { $0.haveReceived(have, from: peer, now: now, entitled: entitled) }
    }

    /// Signed room messages handed over by the session's peer (their authors or any
    /// member), from one read. Returns the ids to acknowledge (stored, or final: never to be
    /// stored) and the messages newly shown. Stored in two transactions for the whole read
    /// (the signed rows, then the messages per room), not per message.
    func receivedSignedRoomMessages(
        _ arrivals: [RoomMessageArrival], from peer: IdentityPublicKey, on conn: PeerConnection
    ) throws(StoreError) -> (acks: [MessageID], shown: [StoredMessage]) {
        var acks: [MessageID] = []
        var accepted: [SignedRoomMessage] = []
        var changes: [SignedRoomMessage] = []
        // The membership at an anchor, once per anchor in this read (anchor hashes name
        // operations of one room only).
        var folds: [[RoomOperationHash]: RoomFold?] = [:]
        for arrival in arrivals {
            let m: SignedRoomMessage
            switch arrival {
            case let .badSignature(room, author, id):
                attackLog.log(
                    key: "room-forged:" + peer.hex,
                    "room message refused: its signature is not its author's (forged or altered by the member that sent it)",
                    [
                        "room": room.hex, "from": peer.fingerprintText, "author": author.fingerprintText,
                        "id": id.hex
                    ])
                withSync { $0.badMessage(from: peer) }
                continue
            case .verified(let v):
                m = v
            }
            let entry = try roomEntry(m.roomID)
            guard let state = entry.state, state.hasJoined(myIdentityKey) else {
                attackLog.log(
                    key: "room-msg-not-ours:" + peer.hex, "signed room message for a room this node is not in; dropped",
                    ["room": m.roomID.hex, "from": peer.fingerprintText])
                acks.append(m.id)
                continue
            }
            guard state.hasJoined(peer) else {
                // Only a current member passes messages on (a removed member's forwarding is
                // not shown); an author whose join is still on its way sends again later.
                attackLog.log(
                    key: "room-msg-forwarder:" + peer.hex,
                    "signed room message from a peer that is not a joined member here; not stored, unacknowledged",
                    ["room": m.roomID.hex, "from": peer.fingerprintText, "author": m.author.fingerprintText])
                continue
            }
            if folds[m.anchor] == nil {
                folds[m.anchor] = .some(
                    RoomEntitlement.membership(at: m.anchor, state: state, operations: entry.operations))
            }
            switch RoomEntitlement.verdict(
                author: m.author, membershipThen: folds[m.anchor] ?? nil, for: myIdentityKey, state: state)
            {
            case .entitled:
                break
            case .anchorUnknown:
                // The operations it names are still on their way: not acknowledged, sent again.
                log.info(
                    "signed room message names operations not held yet; not acknowledged",
                    ["room": m.roomID.hex, "from": peer.fingerprintText])
                continue
            case .authorNotMember, .notEntitled:
                attackLog.log(
                    key: "room-msg-entitlement:" + peer.hex,
                    "signed room message not for this node by the room's membership at its place; dropped",
                    ["room": m.roomID.hex, "from": peer.fingerprintText, "author": m.author.fingerprintText])
                acks.append(m.id)
                continue
            }
            if m.author == myIdentityKey {
                acks.append(m.id)
                continue
            }
            if m.kind.isChange {
                changes.append(m)
            } else {
                accepted.append(m)
            }
        }
        guard !accepted.isEmpty else { return (acks + (try receivedSignedRoomChanges(changes, from: peer)), []) }
        // Stored messages count against their author's quota, whoever hands them over.
        var refusedIDs: Set<MessageID> = []
        var authors: [IdentityPublicKey] = []
        for m in accepted where !authors.contains(m.author) { authors.append(m.author) }
        for author in authors {
            let chats = accepted.filter { $0.author == author }.map {
                RoomChatRecord(
                    id: $0.id, roomID: $0.roomID, sequence: $0.roomSequence, createdAt: $0.createdAt, body: $0.body,
                    replyTo: $0.replyTo)
            }
            // A count the store cannot give throws: none of the read is stored or acknowledged.
            let (_, refused) = try judgeByQuota(chats, from: author)
            if !refused.isEmpty {
                sendRefusals(refused, on: conn)
                refusedIDs.formUnion(refused.flatMap(\.1))
            }
        }
        let keep = accepted.filter { !refusedIDs.contains($0.id) }
        let now = nowMs
        let inserts = try store.insertSignedRoomMessages(
            keep.map {
                Store.SignedRoomMessageRow(
                    room: $0.roomID, author: $0.author, sequence: $0.roomSequence, id: $0.id,
                    encoded: $0.encoded())
            }, at: now)
        var toShow: [SignedRoomMessage] = []
        for (m, result) in zip(keep, inserts) {
            acks.append(m.id)
            if result == .conflict {
                attackLog.log(
                    key: "room-equivocation:" + m.author.hex,
                    "an author signed two different room messages with one sequence; the first is kept",
                    ["room": m.roomID.hex, "author": m.author.fingerprintText, "sequence": "\(m.roomSequence)"])
            } else {
                toShow.append(m)
            }
        }
        var shown: [StoredMessage] = []
        var rooms: [RoomID] = []
        for m in toShow where !rooms.contains(m.roomID) { rooms.append(m.roomID) }
        for room in rooms {
            let results = try store.storeIncomingRoomMessages(
                toShow.filter { $0.roomID == room }.map {
                    IncomingMessage(
                        id: $0.id, sender: $0.author, recipient: myIdentityKey,
                        sequence: Int64(clamping: $0.roomSequence), createdAt: Int64(clamping: $0.createdAt),
                        body: $0.body, replyTo: $0.replyTo)
                }, room: room, at: now)
            for r in results where r.isNew {
                shown.append(r.message)
                quotaStored([r.message.body.utf8.count], from: r.message.sender)
            }
        }
        let mono = clock.monotonicNow()
        // Relayed only while new (`relayWindow`, by the author's clock): what a member catches
        // up is held by the others already.
        let window = UInt64(RoomSyncLimits.relayWindow.components.seconds) * 1000
        let wallNow = UInt64(max(0, nowMs))
        withSync { machine in
            toShow.flatMap {
                machine.stored(
                    room: $0.roomID, author: $0.author, sequence: $0.roomSequence, from: peer, now: mono,
                    relay: wallNow <= window || $0.createdAt >= wallNow - window)  // no overflow on a hostile time
            }
        }
        // Changes after the messages of the same read (a message and its edit often come
        // together), then those that waited for one of these messages.
        acks += try receivedSignedRoomChanges(changes, from: peer)
        if !shown.isEmpty { retryWaitingRoomChanges(targets: Set(shown.map(\.id))) }
        return (acks, shown)
    }

    /// Signed edits, deletes and reactions (verified, entitled), whoever handed them over:
    /// judged by `ConversationRules` as from their **author** (only the author edits or
    /// deletes its own message; anyone entitled reacts), applied, kept signed for sync.
    /// One whose target this node does not hold yet is neither stored nor acknowledged: it
    /// comes again (its author's outbox, or a later session's sync). Returns the ids to
    /// acknowledge.
    private func receivedSignedRoomChanges(_ changes: [SignedRoomMessage], from peer: IdentityPublicKey)
        throws(StoreError) -> [MessageID]
    {
        guard !changes.isEmpty else { return [] }
        var ready: [SignedRoomMessage] = []
        for c in changes {
            guard let target = c.target, c.action != nil else { continue }
            let held = try store.messages(id: target, limit: 4).contains {
                $0.id == target && $0.room == c.roomID
            }
            if held {
                ready.append(c)
            } else if !roomBook.sync.waitingChanges.contains(where: {
                $0.change.id == c.id && $0.change.author == c.author
            }) {
                log.info(
                    "signed room change names a message not held yet; held, not acknowledged",
                    ["room": c.roomID.hex, "from": peer.fingerprintText, "target": target.hex])
                roomBook.sync.waitingChanges.append((c, peer))
                if roomBook.sync.waitingChanges.count > RoomSyncLimits.maxWaitingChanges {
                    roomBook.sync.waitingChanges.removeFirst()
                }
            }
        }
        guard !ready.isEmpty else { return [] }
        var byID: [SignedRoomMessageKey: SignedRoomMessage] = [:]
        for c in ready where byID[.init(id: c.id, author: c.author)] == nil {
            byID[.init(id: c.id, author: c.author)] = c
        }
        let incoming = ready.compactMap { c -> IncomingAction? in
            guard let target = c.target, let action = c.action else { return nil }
            let (kind, body): (MessageActionKind, String?)
            switch action {
            case .edit(let text): (kind, body) = (.edit, text)
            case .delete: (kind, body) = (.delete, nil)
            case let .reaction(r, added): (kind, body) = (added ? .react : .unreact, r.text)
            }
            return IncomingAction(
                id: c.id, author: c.author, sequence: Int64(clamping: c.roomSequence),
                createdAt: Int64(clamping: c.createdAt), target: target, kind: kind, body: body,
                room: c.roomID)
        }
        var refusals: [(SignedRoomMessage, ActionRefusal)] = []
        let outcomes = try store.receiveActions(incoming, me: myIdentityKey, at: nowMs) { action, facts in
            guard let c = byID[.init(id: action.id, author: action.author)], let act = c.action else { return false }
            // Membership is settled: the change is entitled at its anchor (checked before).
            let verdict = judgeChange(
                act, sequence: action.sequence, from: c.author, room: c.roomID, roomAccepts: true, facts: facts)
            switch verdict {
            case .apply: return true
            case .stale: return false
            case .refuse(let why):
                refusals.append((c, why))
                return false
            }
        }
        for (c, why) in refusals {
            attackLog.log(
                key: "room-change-refused:" + c.author.hex, "signed room change refused",
                [
                    "room": c.roomID.hex, "from": peer.fingerprintText, "author": c.author.fingerprintText,
                    "why": "\(why)"
                ])
        }
        // Kept signed (refused ones too: a summary never claims what is not held, and a
        // refused change is final), so members pass them on.
        let now = nowMs
        _ = try store.insertSignedRoomMessages(
            ready.map {
                Store.SignedRoomMessageRow(
                    room: $0.roomID, author: $0.author, sequence: $0.roomSequence, id: $0.id,
                    encoded: $0.encoded())
            }, at: now)
        let mono = clock.monotonicNow()
        withSync { machine in
            ready.flatMap {
                machine.stored(room: $0.roomID, author: $0.author, sequence: $0.roomSequence, from: peer, now: mono)
            }
        }
        if outcomes.contains(where: { $0.updated != nil && $0.action.kind == .delete }) {
            messageDriver.deleteApplied()
        }
        for o in outcomes { if let m = o.updated { emit(.messageUpdated(m)) } }
        return ready.map(\.id)
    }

    /// Applies the waiting changes whose target is among `targets` (hex ids of messages just
    /// stored) and acknowledges each to the peer that handed it over, if still connected
    /// (otherwise it comes again and is de-duplicated).
    private func retryWaitingRoomChanges(targets: Set<MessageID>) {
        let due = roomBook.sync.waitingChanges.filter { $0.change.target.map { targets.contains($0) } ?? false }
        guard !due.isEmpty else { return }
        roomBook.sync.waitingChanges.removeAll { w in due.contains { $0.change == w.change } }
        var peers: [IdentityPublicKey] = []
        for d in due where !peers.contains(d.from) { peers.append(d.from) }
        for p in peers {
            do {
                let ids = try receivedSignedRoomChanges(due.filter { $0.from == p }.map(\.change), from: p)
                if let conn = activeConnection(for: p), !ids.isEmpty { sendAcks(ids, on: conn) }
            } catch {
                log.error("could not apply waiting room changes; they come again", ["error": "\(error)"])
            }
        }
    }

    // MARK: Actions

    private func performRoomSync(_ actions: [RoomSyncStateMachine.Action]) {
        for action in actions {
            switch action {
            case let .sendHave(peer, have):
                guard let conn = activeConnection(for: peer), conn.remoteFeatures.contains(.roomSync) else { continue }
                conn.send(.roomHave(have))
                // Operation summaries ride on message summaries: at session start, when a
                // member joins, and by anti-entropy (docs/PROTOCOL.md "Operation summaries").
                sendRoomOperationsHave(room: have.roomID, on: conn)
            case let .push(peer, room, author, sequences):
                guard let conn = activeConnection(for: peer), conn.remoteFeatures.contains(.roomSync) else { continue }
                let encoded: [[UInt8]]
                do {
                    encoded = try store.signedRoomMessages(room: room, author: author, sequences: sequences)
                } catch {
                    log.error("could not read signed room messages to pass on", ["error": "\(error)"])
                    continue
                }
                log.debug(
                    "passing room messages on",
                    [
                        "room": room.hex, "to": peer.fingerprintText, "author": author.fingerprintText,
                        "count": "\(encoded.count)"
                    ])
                for bytes in encoded {
                    guard let m = try? SignedRoomMessage.decode(bytes) else {
                        log.warning("stored signed room message does not verify; not passed on", ["room": room.hex])
                        continue
                    }
                    roomBook.sync.pushed[peer, default: [:]][m.id] = (m.roomID, m.author, m.roomSequence)
                    conn.send(.roomMessage(.verified(m)))
                }
            case let .close(peer, reason):
                attackLog.log(
                    key: "room-forged-close:" + peer.hex, "closing a session that hands over forged room messages",
                    ["peer": peer.fingerprintText, "why": reason])
                activeConnection(for: peer)?.close(reason: .protocolError, text: reason)
            }
        }
    }
}

/// Names one signed room message or change: ids are unique per author only.
private struct SignedRoomMessageKey: Hashable {
    let id: MessageID
    let author: IdentityPublicKey
}
