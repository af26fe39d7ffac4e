import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Rooms on the node: membership operations (signed, stored, resolved, forwarded to every
/// member) and room messages (sent by their author to each member over the pairwise
/// session, queued per member, acknowledged per member). docs/PROTOCOL.md, "Rooms".
///
/// Who receives what is `RoomDistribution`'s decision (ParleyNodeCore); this driver stores,
/// resolves, queues what it says and pumps the sessions it touched.
extension Node {
    // MARK: Room book

    /// The room's operations and state, from memory or loaded from the store.
    func roomEntry(_ id: RoomID) throws(StoreError) -> RoomBook.Entry {
        if let e = roomBook.entries[id] { return e }
        var entry = RoomBook.Entry()
        for stored in try store.roomOperations(room: id.hex) {
            do {
                let op = try RoomOperation.decode(stored.encoded)
                entry.operations[op.hash] = op
            } catch {
                // Only operations that verified were stored: a damaged row, not an attack.
                log.warning("stored room operation does not decode; ignored", ["room": id.hex, "error": "\(error)"])
            }
        }
        if let rec = try store.room(id: id.hex), let hash = RoomOperationHash(hex: rec.root), let root = entry.operations[hash] {
            entry.root = root
            entry.state = RoomResolver.resolve(root: root, operations: Array(entry.operations.values))
        }
        roomBook.entries[id] = entry
        return entry
    }

    /// Stores a new, verified operation, re-resolves its room, forwards the operation and
    /// tells observers. Returns false (and stores nothing) for a duplicate or a refused
    /// operation; refusals are logged. Throws only when the store fails.
    @discardableResult
    func acceptRoomOperation(_ op: RoomOperation, from peer: IdentityPublicKey?) throws(StoreError) -> Bool {
        var entry = try roomEntry(op.roomID)
        if entry.operations[op.hash] != nil { return false }
        let source = peer?.fingerprintText ?? "local"
        guard entry.operations.count < RoomLimits.maxOperationsPerRoom else {
            attackLog.log(key: "room-ops:" + op.roomID.hex, "room operation refused: the room has too many operations",
                          ["room": op.roomID.hex, "from": source, "limit": "\(RoomLimits.maxOperationsPerRoom)"])
            return false
        }
        if entry.operations.isEmpty, try store.roomsWithOperationsCount() >= RoomDaemonLimits.maxRooms {
            attackLog.log(key: "rooms-full", "room operation for a new room refused: too many rooms",
                          ["room": op.roomID.hex, "from": source, "limit": "\(RoomDaemonLimits.maxRooms)"])
            return false
        }
        if case .create = op.change, let root = entry.root, root.hash != op.hash {
            attackLog.log(key: "room-create:" + op.roomID.hex, "a second create for a known room refused",
                          ["room": op.roomID.hex, "from": source, "actor": Fingerprint(op.actor).description])
            return false
        }
        let now = nowMs
        guard try store.insertRoomOperation(StoredRoomOperation(hash: op.hash.hex, room: op.roomID.hex,
                                                                sequence: Int64(clamping: op.sequence),
                                                                encoded: op.encoded()), at: now) else {
            entry.operations[op.hash] = op
            roomBook.entries[op.roomID] = entry
            return false
        }
        entry.operations[op.hash] = op
        if case .create = op.change, entry.root == nil { entry.root = op }
        let before = entry.state
        if let root = entry.root {
            entry.state = RoomResolver.resolve(root: root, operations: Array(entry.operations.values))
        }
        roomBook.entries[op.roomID] = entry
        guard let after = entry.state else {
            log.debug("room operation stored until the room's create arrives", ["room": op.roomID.hex, "from": source])
            return true
        }
        if let reason = after.rejected[op.hash] {
            log.info("room operation not applied", ["room": op.roomID.hex, "from": source, "reason": reason.rawValue])
        }
        try saveRoomState(after, now: now)
        try distribute(op, before: before, after: after, from: peer, entry: entry, now: now)
        if before?.members != after.members || before?.version != after.version || before == nil,
           let rec = try store.room(id: op.roomID.hex) {
            log.info("room updated", ["room": after.name, "id": after.roomID.hex, "version": "\(after.version)",
                                      "members": "\(after.members.count)", "member": "\(after.isMember(myIdentityKey))"])
            emit(.roomUpdated(rec))
        }
        return true
    }

    private func saveRoomState(_ s: RoomState, now: Int64) throws(StoreError) {
        try store.saveRoom(RoomRecord(id: s.roomID.hex, root: s.root.hex, name: s.name, creator: s.creator.hex,
                                      createdAt: Int64(clamping: s.createdAt), version: Int64(clamping: s.version),
                                      members: s.members.map(\.hex), isMember: s.isMember(myIdentityKey), updatedAt: now))
    }

    /// Queues the operation (and, for newcomers, the whole log) as `RoomDistribution` says,
    /// then pumps the sessions of everyone who got something.
    private func distribute(_ op: RoomOperation, before: RoomState?, after: RoomState, from peer: IdentityPublicKey?,
                            entry: RoomBook.Entry, now: Int64) throws(StoreError) {
        let plan = RoomDistribution.plan(for: op, before: before, after: after, me: myIdentityKey, receivedFrom: peer)
        try store.queueRoomOperations([op.hash.hex], for: plan.operationTo.map(\.hex), at: now)
        if !plan.wholeLogTo.isEmpty {
            let log = entry.operations.values.sorted(by: RoomResolver.precedes).map(\.hash.hex)
            try store.queueRoomOperations(log, for: plan.wholeLogTo.map(\.hex), at: now)
        }
        for id in Set(plan.operationTo + plan.wholeLogTo) { if let conn = activeConnection(for: id) { pump(conn) } }
    }

    // MARK: Local API (control socket)

    /// Creates a room with this node and `members`; returns once the create is stored.
    func createRoom(name: String, members: [PeerRecord]) throws -> RoomRecord {
        loop.preconditionInEventLoop()
        for p in members { if let refusal = sendRefusal(p) { throw refusal } }
        let keys = try members.map { try IdentityPublicKey(bytes: Sodium.fromHex($0.identity) ?? []) }
        guard Set(keys + [myIdentityKey]).count <= RoomLimits.maxMembers else { throw RoomError.tooManyMembers(RoomLimits.maxMembers) }
        let op: RoomOperation
        do {
            op = try RoomOperation.create(roomID: .random(), name: name, members: keys, by: self.keys.identity,
                                          createdAt: UInt64(max(0, nowMs)))
        } catch { throw RoomError.invalid(error.description) }
        let rec = try storing { () throws(StoreError) in
            try acceptRoomOperation(op, from: nil)
            return try store.room(id: op.roomID.hex)
        }
        guard let rec else { throw RoomError.notFound(op.roomID.hex) }
        return rec
    }

    /// Runs store work, turning its failure into the node's storage error.
    private func storing<T>(_ body: () throws(StoreError) -> T) throws(NodeError) -> T {
        do { return try body() } catch { throw .storage(error) }
    }

    enum MembershipChange { case add, remove }

    /// Adds or removes a member (removing oneself is leaving), as a signed operation.
    func changeMembership(of room: RoomRecord, _ change: MembershipChange, identity: String, name: String) throws -> RoomRecord {
        loop.preconditionInEventLoop()
        guard let id = RoomID(hex: room.id), let target = Sodium.fromHex(identity).flatMap({ try? IdentityPublicKey(bytes: $0) }) else {
            throw RoomError.notFound(room.id)
        }
        let entry: RoomBook.Entry
        do { entry = try roomEntry(id) } catch { throw NodeError.storage(error) }
        guard let state = entry.state, state.isMember(myIdentityKey) else { throw RoomError.notMember(room) }
        guard entry.operations.count < RoomLimits.maxOperationsPerRoom else { throw RoomError.tooManyOperations(room) }
        let op: RoomOperation
        do {
            switch change {
            case .add:
                guard !state.isMember(target) else { throw RoomError.alreadyMember(room: room.name, peer: name) }
                guard state.members.count < RoomLimits.maxMembers else { throw RoomError.tooManyMembers(RoomLimits.maxMembers) }
                op = try RoomOperation.change(.add(target), roomID: id, after: state.heads, by: keys.identity,
                                              createdAt: UInt64(max(0, nowMs)))
            case .remove:
                guard state.isMember(target) else { throw RoomError.notAMember(room: room.name, peer: name) }
                op = try RoomOperation.change(.remove(target), roomID: id, after: state.heads, by: keys.identity,
                                              createdAt: UInt64(max(0, nowMs)))
            }
        } catch let e as RoomOperationError { throw RoomError.invalid(e.description) }
        return try storing { () throws(StoreError) in
            try acceptRoomOperation(op, from: nil)
            return try store.room(id: room.id) ?? room
        }
    }

    /// Queues a message to every other member of the room; returns once it is on disk.
    func sendToRoom(_ room: RoomRecord, body: String, replyTo: String? = nil) throws -> StoredMessage {
        loop.preconditionInEventLoop()
        let size = body.utf8.count
        guard size > 0 else { throw NodeError.emptyBody }
        guard size <= WireLimits.maxBodyBytes else { throw NodeError.bodyTooLarge(size) }
        guard let id = RoomID(hex: room.id) else { throw RoomError.notFound(room.id) }
        guard let state = try storing({ () throws(StoreError) in try roomEntry(id).state }), state.isMember(myIdentityKey) else {
            throw RoomError.notMember(room)
        }
        guard try storing({ () throws(StoreError) in try store.queuedRoomMessageCount(room: room.id) }) < RoomDaemonLimits.maxQueuedPerRoom else {
            throw RoomError.queueFull(room, RoomDaemonLimits.maxQueuedPerRoom)
        }
        let others = RoomDistribution.messageRecipients(in: state, me: myIdentityKey)
        let stored = try storing { () throws(StoreError) in
            try store.enqueueRoomMessage(id: MessageID.random().hex, room: room.id, body: body,
                                         createdAt: nowMs, sender: myIdentity, members: others.map(\.hex),
                                         replyTo: replyTo)
        }
        for m in others { if let conn = activeConnection(for: m) { pump(conn) } }
        return stored
    }

    /// Finds a room by `#name`, name, or id prefix (at least 4 hex digits), `#` optional.
    func resolveRoom(_ selector: String) throws -> RoomRecord {
        let query = selector.hasPrefix("#") ? String(selector.dropFirst()) : selector
        let all: [RoomRecord]
        do { all = try store.rooms() } catch { throw NodeError.storage(error) }
        for match in [{ (r: RoomRecord) in r.name == query },
                      { (r: RoomRecord) in r.name.lowercased() == query.lowercased() }] {
            let found = all.filter(match)
            // Prefer rooms we are still in: an old room we left may share the name.
            let current = found.filter(\.isMember)
            if current.count == 1 { return current[0] }
            if found.count == 1 { return found[0] }
            if found.count > 1 { throw RoomError.ambiguous(selector, found) }
        }
        let prefix = query.lowercased()
        if prefix.count >= RoomDaemonLimits.minIDPrefix, prefix.allSatisfy(\.isHexDigit) {
            let found = all.filter { $0.id.hasPrefix(prefix) }
            if found.count == 1 { return found[0] }
            if found.count > 1 { throw RoomError.ambiguous(selector, found) }
        }
        throw RoomError.notFound(selector)
    }

    // MARK: Wire

    func connection(_ conn: PeerConnection, receivedRoomTraffic records: [RoomTraffic]) {
        guard let sender = activePeer(of: conn) else { return }
        var acks: [MessageID] = []
        var chats: [RoomChatRecord] = []
        var received: [StoredMessage] = []
        do {
            for record in records {
                switch record {
                case .operation(let op):
                    try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
                    try acceptRoomOperation(op, from: sender)
                    acks.append(op.hash.ackID)
                case .chat(let c):
                    chats.append(c)
                }
            }
            try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
        } catch {
            // What was stored is acknowledged; the rest stays queued at the sender.
            log.error("could not store room traffic; it stays queued at the sender", ["error": "\(error)"])
            sendAcks(acks, on: conn)
            conn.close(reason: .normal, text: "receiver storage failure")
            for m in received { emit(.messageReceived(m)) }
            return
        }
        sendAcks(acks, on: conn)
        for m in received { emit(.messageReceived(m)) }
    }

    /// Stores consecutive room chats (one transaction per room), dropping those whose
    /// author is not a member in this node's view, or whose room this node is not in.
    private func storeRoomChats(_ chats: inout [RoomChatRecord], from sender: IdentityPublicKey, acks: inout [MessageID],
                                received: inout [StoredMessage]) throws(StoreError) {
        guard !chats.isEmpty else { return }
        defer { chats.removeAll() }
        let now = nowMs
        var byRoom: [(RoomID, [RoomChatRecord])] = []
        for c in chats {
            if let i = byRoom.firstIndex(where: { $0.0 == c.roomID }) { byRoom[i].1.append(c) } else { byRoom.append((c.roomID, [c])) }
        }
        for (roomID, list) in byRoom {
            let state = try roomEntry(roomID).state
            guard RoomDistribution.acceptsMessage(in: state, from: sender, me: myIdentityKey) else {
                // Acknowledged anyway: resending would not change our view of the room.
                attackLog.log(key: "room-chat:" + sender.hex + roomID.hex,
                              "room message from a non-member (in this node's view) dropped",
                              ["room": roomID.hex, "from": sender.fingerprintText, "count": "\(list.count)"])
                acks += list.map(\.id)
                continue
            }
            let incoming = list.map {
                IncomingMessage(id: $0.id.hex, sender: sender.hex, recipient: myIdentity,
                                sequence: Int64(clamping: $0.sequence), createdAt: Int64(clamping: $0.createdAt), body: $0.body,
                                replyTo: $0.replyTo?.hex)
            }
            let results = try store.storeIncomingRoomMessages(incoming, room: roomID.hex, at: now)
            acks += list.map(\.id)
            received += results.filter(\.isNew).map(\.message)
        }
    }

    /// The room part of an acknowledgement: ids the window knew as room traffic, and ids it
    /// did not know at all (sent on an earlier session).
    func roomTrafficAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard !ids.isEmpty, store.roomOutboxesMayHaveWork else { return }
        do {
            for m in try store.acknowledgeRoomTraffic(ids: ids.map(\.hex), by: peer.hex, at: nowMs) {
                emit(.messageDelivered(m))
            }
        } catch {
            log.error("could not record room delivery; it will be sent again and de-duplicated", ["error": "\(error)"])
        }
    }

    /// Sends queued room operations to the peer of `conn`, parents first, within the window.
    func pumpRoomOperations(_ conn: PeerConnection, peer: IdentityPublicKey) {
        let handle = ObjectIdentifier(conn)
        guard let free = links[handle]?.window.freeSlots, free > 0 else { return }
        let pending: [StoredRoomOperation]
        do { pending = try store.pendingRoomOperations(to: peer.hex, limit: (links[handle]?.window.count ?? 0) + free) } catch {
            log.error("could not read the room operation outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for stored in pending {
            guard let free = links[handle]?.window.freeSlots, free > 0 else { break }
            let key = String(stored.hash.prefix(MessageID.length * 2))
            guard let ackID = MessageID(hex: key), links[handle]?.window.isInFlight(ackID) == false else { continue }
            guard let op = try? RoomOperation.decode(stored.encoded) else {
                log.warning("stored room operation does not decode; dropped from the outbox", ["hash": stored.hash])
                _ = try? store.acknowledgeRoomOperations(ackIDs: [key], by: peer.hex)
                continue
            }
            guard links[handle]?.window.admit(ackID, bytes: stored.encoded.count, lane: .roomOperation, now: now) == true
            else { continue }
            conn.send(.roomOperation(op))
        }
    }

    /// Sends queued room messages to the peer of `conn`, in sequence order, within the window.
    func pumpRoomMessages(_ conn: PeerConnection, peer: IdentityPublicKey) {
        guard conn.isWritable, activePeer(of: conn) != nil else { return }
        let handle = ObjectIdentifier(conn)
        guard let free = links[handle]?.window.freeSlots, free > 0 else { return }
        let pending: [StoredMessage]
        do { pending = try store.pendingRoomMessages(to: peer.hex, limit: (links[handle]?.window.count ?? 0) + free) } catch {
            log.error("could not read the room outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for m in pending {
            guard let free = links[handle]?.window.freeSlots, free > 0 else { break }
            guard let mid = MessageID(hex: m.id), let rid = m.room.flatMap(RoomID.init(hex:)) else { continue }
            guard links[handle]?.window.admit(mid, bytes: m.body.utf8.count, lane: .roomChat, now: now) == true
            else { continue }
            // A member whose node predates replies gets a plain room message.
            let replyTo = conn.remoteFeatures.contains(.conversation) ? m.replyTo.flatMap { MessageID(hex: $0) } : nil
            conn.send(.roomChat(RoomChatRecord(id: mid, roomID: rid, sequence: UInt64(max(0, m.sequence)),
                                               createdAt: UInt64(max(0, m.createdAt)), body: m.body, replyTo: replyTo)))
        }
    }
}
