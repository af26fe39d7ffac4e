import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the control side asks of rooms (through Node+Rooms.swift): create, change, answer
/// an invitation, send. Each change is checked against the rules before it is signed, so
/// the user hears why it is not allowed instead of a silently ignored operation.
extension RoomDriver {
    /// Creates a room with this node (its owner) and invites `members`; returns once the
    /// create is stored.
    func create(name: String, members: [PeerRecord], policy: RoomOperation.Policy) throws -> RoomRecord {
        loop.preconditionInEventLoop()
        for p in members { if let refusal = p.sendRefusal { throw refusal } }
        let keys = members.map(\.identity)
        guard Set(keys + [me]).count <= RoomLimits.maxCreateMembers else {
            throw RoomError.tooManyMembers(RoomLimits.maxCreateMembers)
        }
        let op: RoomOperation
        do {
            op = try RoomOperation.create(
                name: name, members: keys, policy: policy, by: identity, createdAt: UInt64(max(0, nowMs)))
        } catch { throw RoomError.invalid(String(describing: error)) }
        let rec = try storing { () throws(StoreError) in
            try accept(op, from: nil)
            return try store.room(id: op.roomID)
        }
        guard let rec else { throw RoomError.notFound(op.roomID.hex) }
        return rec
    }

    /// Signs `change` on top of the room's heads, checks it against the rules, stores and
    /// sends it.
    func change(_ room: RoomRecord, _ change: RoomOperation.Change) throws -> RoomRecord {
        loop.preconditionInEventLoop()
        let id = room.id
        let entry = try storing { () throws(StoreError) in try self.entry(id) }
        guard let state = entry.state, let root = entry.root, state.isMember(me) else {
            throw RoomError.notMember(room)
        }
        guard entry.operations.count < RoomLimits.maxOperationsPerRoom else { throw RoomError.tooManyOperations(room) }
        // A remove (or leave) names the target's last accepted message (docs/PROTOCOL.md
        // "Removal caps"), when every member can read it.
        var cap: UInt64?
        if case .remove(let target) = change {
            cap = try storing { () throws(StoreError) in
                try host?.roomRemovalCapToSign(target: target, in: state)
            }
        }
        let op: RoomOperation
        do {
            op = try RoomOperation.change(
                change, roomID: id, after: state.heads, by: identity, createdAt: UInt64(max(0, nowMs)),
                removalCap: cap)
        } catch { throw RoomError.invalid(String(describing: error)) }
        var trial = entry.resolution ?? RoomResolution(root: root, operations: Array(entry.operations.values))
        trial?.insert(op)
        if let why = trial?.state.rejected[op.hash] { throw RoomError.refused(room, change, why) }
        return try storing { () throws(StoreError) in
            try accept(op, from: nil)
            return try store.room(id: room.id) ?? room
        }
    }

    /// Accepts an invitation: signs a join, after which the room's messages flow.
    func acceptInvitation(_ room: RoomRecord) throws -> RoomRecord {
        guard room.status == .invited else { throw RoomError.notInvited(room) }
        return try change(room, .join)
    }

    /// Declines an invitation: signs a leave (so the inviter's view stops showing this node
    /// as invited) and keeps nothing else of the room.
    func declineInvitation(_ room: RoomRecord) throws -> RoomRecord {
        guard room.status == .invited else { throw RoomError.notInvited(room) }
        return try change(room, .remove(me))
    }

    /// Pipelined sends to rooms, in order: each checked, signed (consecutive room sequences
    /// per room) and queued for its recipients (`RoomHost.roomMessageRecipients`), all
    /// stored in one transaction, so a run of room messages costs one commit, like a run of
    /// direct ones. A send that fails its checks fails alone; a failed transaction fails
    /// the run.
    func send(_ sends: [(room: RoomRecord, body: String, replyTo: MessageID?)]) -> [Result<StoredMessage, Error>] {
        loop.preconditionInEventLoop()
        var results = [Result<StoredMessage, Error>?](repeating: nil, count: sends.count)
        var planned: [PlannedRoomSend] = []
        var nextSequence: [RoomID: UInt64] = [:]
        var queued: [RoomID: Int] = [:]
        let createdAt = nowMs
        for (i, send) in sends.enumerated() {
            do {
                let size = send.body.utf8.count
                guard size > 0 else { throw NodeError.emptyBody }
                guard size <= WireLimits.maxBodyBytes else { throw NodeError.bodyTooLarge(size) }
                let room = send.room
                let id = room.id
                guard let state = try storing({ () throws(StoreError) in try entry(id).state }), state.hasJoined(me)
                else {
                    if room.status == .invited { throw RoomError.notJoined(room) }
                    throw RoomError.notMember(room)
                }
                if queued[id] == nil {
                    queued[id] = try storing { () throws(StoreError) in try store.queuedRoomMessageCount(room: id) }
                }
                guard queued[id, default: 0] < RoomDaemonLimits.maxQueuedPerRoom else {
                    throw RoomError.queueFull(room, RoomDaemonLimits.maxQueuedPerRoom)
                }
                queued[id, default: 0] += 1
                let messageID = MessageID.random()
                // Signed before it is stored, and kept in the same transaction: members that
                // sync rooms get the signed form.
                if nextSequence[id] == nil { nextSequence[id] = try? store.nextRoomSequence(room: id, author: me) }
                var signed: SignedRoomMessage?
                let replyTo = send.replyTo
                if let sequence = nextSequence[id] {
                    signed = host?.signRoomMessage(
                        id: messageID, room: id, sequence: sequence, state: state, body: send.body,
                        createdAt: createdAt, replyTo: replyTo)
                    if signed != nil { nextSequence[id] = sequence + 1 }
                }
                // Members known to sync rooms get a signed message from a few of them
                // (`RoomFanOut`), the others from this node. One that could not be signed (its
                // sequence unreadable, the signing failed) cannot be passed on by anyone, so
                // it goes from this node to every member, as before room sync: queued for
                // the fan-out's few only, the others would never receive it.
                let everyone = RoomDistribution.messageRecipients(in: state, me: me)
                let recipients = signed == nil ? everyone : host?.roomMessageRecipients(state) ?? everyone
                planned.append(
                    PlannedRoomSend(
                        index: i, recipients: recipients, signed: signed,
                        message: Store.NewRoomMessage(
                            id: messageID, room: id, body: send.body, createdAt: createdAt,
                            members: recipients, replyTo: replyTo,
                            signed: signed.map {
                                Store.SignedRoomMessageRow(
                                    room: id, author: me, sequence: $0.roomSequence, id: messageID,
                                    encoded: $0.encoded())
                            })))
            } catch {
                results[i] = .failure(error)
            }
        }
        if !planned.isEmpty {
            do {
                let stored = try store.enqueueRoomMessages(planned.map(\.message), sender: me)
                var pumped: Set<IdentityPublicKey> = []
                for (p, m) in zip(planned, stored) {
                    results[p.index] = .success(m)
                    if let signed = p.signed { host?.roomSyncStoredOwn(signed, queuedFor: p.recipients) }
                    pumped.formUnion(p.recipients)
                }
                for m in pumped { if let link = host?.activeConnection(for: m) { host?.pump(link) } }
            } catch {
                for p in planned { results[p.index] = .failure(NodeError.storage(error)) }
            }
        }
        return results.map { $0 ?? .failure(NodeError.emptyBody) }
    }
}

/// One room send that passed its checks, signed and waiting for the run's transaction.
private struct PlannedRoomSend {
    var index: Int
    var recipients: [IdentityPublicKey]
    var signed: SignedRoomMessage?
    var message: Store.NewRoomMessage
}
