import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Signed room messages and changes handed over by a member (their author or any member
/// passing them on; docs/PROTOCOL.md "Room sync"): verified, judged by the room's
/// membership at the message's place (`RoomEntitlement`) and the author's receive quota,
/// stored, shown, and relayed while new.
extension RoomSyncDriver {
    /// Signed room messages handed over by the session's peer, from one read. Returns the
    /// ids to acknowledge (stored, or final: never to be stored) and the messages newly
    /// shown. Stored in two transactions for the whole read (the signed rows, then the
    /// messages per room), not per message.
    func receivedSignedMessages(
        _ arrivals: [RoomMessageArrival], from peer: IdentityPublicKey, on link: Link
    ) throws(StoreError) -> (acks: [MessageID], shown: [StoredMessage]) {
        guard let host else { return ([], []) }
        var acks: [MessageID] = []
        var accepted: [SignedRoomMessage] = []
        var changes: [SignedRoomMessage] = []
        // The place at an anchor (membership and removal caps), once per anchor in this
        // read (anchor hashes name operations of one room only).
        var places: [[RoomOperationHash]: RoomEntitlement.Place?] = [:]
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
            let entry = try host.roomForSync(m.roomID)
            guard let state = entry.state, state.hasJoined(me) else {
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
            if places[m.anchor] == nil {
                places[m.anchor] = .some(
                    RoomEntitlement.place(at: m.anchor, state: state, operations: entry.operations))
            }
            switch RoomEntitlement.verdict(
                author: m.author, sequence: m.roomSequence, place: places[m.anchor] ?? nil, for: me, state: state)
            {
            case .entitled:
                break
            case .anchorUnknown:
                // The operations it names are still on their way: not acknowledged, sent again.
                // Once per peer per interval: a member can sign messages naming made-up
                // operations as fast as its session carries them.
                noticeLog.log(
                    key: "anchor:" + peer.hex,
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
            case .beyondRemovalCap:
                // Back-dated past the author's removal (or a message its remover never
                // accepted): final, so acknowledged and dropped, as every member does.
                attackLog.log(
                    key: "room-msg-cap:" + m.author.hex,
                    "signed room message above its author's removal cap (written after the removal, anchored before it); dropped",
                    [
                        "room": m.roomID.hex, "from": peer.fingerprintText, "author": m.author.fingerprintText,
                        "sequence": "\(m.roomSequence)"
                    ])
                acks.append(m.id)
                continue
            }
            if m.author == me {
                acks.append(m.id)
                continue
            }
            if RoomAuthorStanding.verdict(author: host.authorStanding(m.author)) == .refuseBlocked {
                // A blocked key reaches this node only through other members: the block
                // holds here too. Final while it lasts, so acknowledged; not stored or
                // passed on (after an unblock, members hand it over again).
                noticeLog.log(
                    key: "room-msg-blocked:" + m.author.hex,
                    "signed room message or change by a blocked key passed on by a member; dropped",
                    ["room": m.roomID.hex, "from": peer.fingerprintText, "author": m.author.fingerprintText])
                acks.append(m.id)
                continue
            }
            if m.kind.isChange {
                changes.append(m)
            } else {
                accepted.append(m)
            }
        }
        guard !accepted.isEmpty else { return (acks + (try receivedSignedChanges(changes, from: peer)), []) }
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
            let (_, refused) = try host.judgeByQuota(chats, from: author)
            if !refused.isEmpty {
                host.sendRefusals(refused, on: link)
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
                        id: $0.id, sender: $0.author, recipient: me,
                        sequence: Int64(clamping: $0.roomSequence), createdAt: Int64(clamping: $0.createdAt),
                        body: $0.body, replyTo: $0.replyTo)
                }, room: room, at: now)
            for r in results where r.isNew {
                shown.append(r.message)
                host.quotaStored([r.message.body.utf8.count], from: r.message.sender)
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
        acks += try receivedSignedChanges(changes, from: peer)
        if !shown.isEmpty { retryWaitingChanges(targets: Set(shown.map(\.id))) }
        return (acks, shown)
    }

    /// Signed edits, deletes and reactions (verified, entitled), whoever handed them over:
    /// judged by `ConversationRules` as from their **author** (only the author edits or
    /// deletes its own message; anyone entitled reacts), applied, kept signed for sync.
    /// One whose target this node does not hold yet is neither stored nor acknowledged: it
    /// is held (`RoomSyncBook.waitingChanges`) until the target arrives, and comes again
    /// anyway (its author's outbox, or a later session's sync). One over its author's
    /// receive quota is refused to `peer` (not stored, not acknowledged), or acknowledged
    /// and dropped if `peer`'s version cannot keep refused changes queued. Returns the ids to
    /// acknowledge.
    func receivedSignedChanges(_ changes: [SignedRoomMessage], from peer: IdentityPublicKey)
        throws(StoreError) -> [MessageID]
    {
        guard let host, !changes.isEmpty else { return [] }
        var ready: [SignedRoomMessage] = []
        for c in changes {
            guard let target = c.target, c.action != nil else { continue }
            let held = try store.messages(id: target, limit: 4).contains {
                $0.id == target && $0.room == c.roomID
            }
            if held {
                ready.append(c)
            } else if !book.waitingChanges.contains(where: { $0.change.id == c.id && $0.change.author == c.author }) {
                // Once per peer per interval (the waiting list is bounded, the log must be too).
                noticeLog.log(
                    key: "change-target:" + peer.hex,
                    "signed room change names a message not held yet; held, not acknowledged",
                    ["room": c.roomID.hex, "from": peer.fingerprintText, "target": target.hex])
                book.waitingChanges.append((c, peer))
                if book.waitingChanges.count > RoomSyncLimits.maxWaitingChanges {
                    book.waitingChanges.removeFirst()
                }
            }
        }
        // Each change is a row kept (and passed on to other members): it counts against its
        // author's receive quota, whoever handed it over. Over it: a `refused` record to the
        // member that handed it over; not stored, not acknowledged, not relayed. A count the
        // store cannot give throws: none of the read is acknowledged.
        // A member whose version cannot keep refused changes queued would resend them at
        // once: to it they are acknowledged and dropped (`ProtocolFeatures.actionRefusals`).
        var overQuota: Set<SignedRoomMessageKey> = []
        var dropped: [MessageID] = []
        var authors: [IdentityPublicKey] = []
        for c in ready where !authors.contains(c.author) { authors.append(c.author) }
        for author in authors {
            let theirs = ready.filter { $0.author == author }
            let refused = try host.judgeActionsByQuota(
                theirs.map { ($0.id, Self.keptBytes(of: $0)) }, from: author)
            guard !refused.isEmpty else { continue }
            let ids = refused.flatMap(\.1)
            let link = host.activeConnection(for: peer)
            if link?.remoteFeatures.contains(.actionRefusals) ?? true {
                if let link { host.sendRefusals(refused, on: link) }
            } else {
                dropped += ids
                attackLog.log(
                    key: "room-change-quota:" + author.hex,
                    "signed room changes over their author's receive quota acknowledged and dropped (the member's version cannot keep refused ones queued)",
                    ["from": peer.fingerprintText, "author": author.fingerprintText, "count": "\(ids.count)"])
            }
            for id in ids { overQuota.insert(.init(id: id, author: author)) }
        }
        if !overQuota.isEmpty { ready.removeAll { overQuota.contains(.init(id: $0.id, author: $0.author)) } }
        guard !ready.isEmpty else { return dropped }
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
        let outcomes = try store.receiveActions(incoming, me: me, at: nowMs) { action, facts in
            guard let c = byID[.init(id: action.id, author: action.author)], let act = c.action else { return false }
            // Membership is settled: the change is entitled at its anchor (checked before).
            let verdict = host.judgeChange(
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
        _ = try store.insertSignedRoomMessages(
            ready.map {
                Store.SignedRoomMessageRow(
                    room: $0.roomID, author: $0.author, sequence: $0.roomSequence, id: $0.id,
                    encoded: $0.encoded())
            }, at: nowMs)
        let mono = clock.monotonicNow()
        withSync { machine in
            ready.flatMap {
                machine.stored(room: $0.roomID, author: $0.author, sequence: $0.roomSequence, from: peer, now: mono)
            }
        }
        for author in authors {
            let added = outcomes.filter { $0.action.author == author }
            if added.contains(where: \.isNew) {
                host.quotaStored(
                    added.filter(\.isNew).map { $0.updated != nil ? ($0.action.body?.utf8.count ?? 0) : 0 },
                    from: author)
            }
        }
        if outcomes.contains(where: { $0.updated != nil && $0.action.kind == .delete }) { host.roomMessageDeleted() }
        for o in outcomes { if let m = o.updated { host.emit(.messageUpdated(m)) } }
        return ready.map(\.id) + dropped
    }

    /// The bytes the receive quota counts for a signed change: the text its row keeps
    /// (an edit's text, a reaction), as `Store.incomingUsage` sums them.
    static func keptBytes(of change: SignedRoomMessage) -> Int {
        switch change.action {
        case .edit(let text)?: text.utf8.count
        case .reaction(let r, _)?: r.text.utf8.count
        case .delete?, nil: 0
        }
    }

    /// Applies the waiting changes whose target is among `targets` (messages just stored)
    /// and acknowledges each to the peer that handed it over, if still connected
    /// (otherwise it comes again and is de-duplicated).
    func retryWaitingChanges(targets: Set<MessageID>) {
        let due = book.waitingChanges.filter { $0.change.target.map { targets.contains($0) } ?? false }
        guard !due.isEmpty else { return }
        book.waitingChanges.removeAll { w in due.contains { $0.change == w.change } }
        var peers: [IdentityPublicKey] = []
        for d in due where !peers.contains(d.from) { peers.append(d.from) }
        for p in peers {
            do {
                let ids = try receivedSignedChanges(due.filter { $0.from == p }.map(\.change), from: p)
                if let link = host?.activeConnection(for: p), !ids.isEmpty { link.sendAcks(ids) }
            } catch {
                log.error("could not apply waiting room changes; they come again", ["error": "\(error)"])
            }
        }
    }
}

/// Names one signed room message or change: ids are unique per author only.
struct SignedRoomMessageKey: Hashable {
    let id: MessageID
    let author: IdentityPublicKey
}
