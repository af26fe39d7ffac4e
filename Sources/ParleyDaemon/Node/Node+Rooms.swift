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
        for stored in try store.roomOperations(room: id) {
            do {
                let op = try RoomOperation.decode(stored.encoded)
                entry.operations[op.hash] = op
            } catch {
                // Only operations that verified were stored: a damaged row, not an attack.
                log.warning("stored room operation does not decode; ignored", ["room": id.hex, "error": "\(error)"])
            }
        }
        if let rec = try store.room(id: id), let root = entry.operations[rec.root] {
            entry.root = root
            entry.resolution = RoomResolution(root: root, operations: Array(entry.operations.values))
            entry.state = entry.resolution?.state
        }
        roomBook.entries[id] = entry
        return entry
    }

    /// Resolves every stored room again from its operations and rewrites the cached state
    /// where it differs (issue 29: rooms resolved under the version-2 rule, where a void
    /// removal by a demoted admin could keep a member out for good, come back right on
    /// the first start after the upgrade; docs/PROTOCOL.md, "Changes to the rule").
    /// The operations are the truth and the cache is cheap to rebuild, so this runs at
    /// every start, not once. Returns the rooms whose state changed.
    @discardableResult
    func reResolveStoredRooms() throws(StoreError) -> [RoomRecord] {
        var changed: [RoomRecord] = []
        for previous in try store.rooms() where previous.status != .retired {
            guard let state = try roomEntry(previous.id).state else { continue }
            var now = roomRecord(state, previous: previous, deliveredBy: nil, now: previous.updatedAt)
            guard now != previous else { continue }
            now.updatedAt = nowMs
            try store.saveRoom(now)
            changed.append(now)
            log.info(
                "room resolved again under the current rule",
                [
                    "room": now.name, "id": now.id.hex, "status": now.status.rawValue, "was": previous.status.rawValue,
                    "joined": "\(now.joined.count)", "wasJoined": "\(previous.joined.count)"
                ])
            emit(.roomUpdated(now))
        }
        return changed
    }

    /// The room as resolved now (nil before its create is known).
    func roomState(_ room: RoomRecord) throws -> RoomState? {
        try storing { () throws(StoreError) in try roomEntry(room.id).state }
    }

    /// Takes a verified operation (received from `peer`, or this node's own when nil):
    /// `RoomAdmission` says whether it is kept; a kept one is stored, the room re-resolved,
    /// the operation forwarded as `RoomDistribution` says, observers told, and operations
    /// and messages that waited for it retried. Returns false for a duplicate, a refused or
    /// a waiting operation (refusals are logged). Throws only when the store fails.
    @discardableResult
    func acceptRoomOperation(_ op: RoomOperation, from peer: IdentityPublicKey?) throws(StoreError) -> Bool {
        var entry = try roomEntry(op.roomID)
        if entry.operations[op.hash] != nil { return false }
        let source = peer?.fingerprintText ?? "local"
        if case .create = op.change, let root = entry.root, root.hash != op.hash {
            // The room id is the create's hash: another create cannot name it (short of a
            // 128-bit collision), so this is a forgery or a bug.
            attackLog.log(
                key: "room-create:" + op.roomID.hex, "a second create for a known room refused",
                ["room": op.roomID.hex, "from": source, "actor": Fingerprint(op.actor).description])
            return false
        }
        if entry.root == nil, let peer { return try acceptUnknownRoomOperation(op, from: peer) }
        let root: RoomOperation?
        if let r = entry.root { root = r } else if case .create = op.change { root = op } else { root = nil }
        let before = entry.state
        // The room with `op`: decided against the incremental resolution, not replayed.
        var resolution =
            entry.resolution ?? root.flatMap { RoomResolution(root: $0, operations: Array(entry.operations.values)) }
        resolution?.insert(op)
        let after = resolution?.state
        if let peer {
            let unapplied = entry.operations.values.filter {
                $0.actor == op.actor && [.removedConcurrently, .overruled].contains(before?.rejected[$0.hash])
            }.count
            let invitations = before == nil ? try store.invitationCount(from: peer) : 0
            let verdict = RoomAdmission.verdict(
                for: op, before: before, after: after, me: myIdentityKey,
                operationCount: entry.operations.count, unappliedByActor: unapplied,
                invitationsFromSender: invitations)
            switch verdict {
            case .keep, .invitation:
                break
            case .wait:
                holdWaitingRoomOperation(op, from: peer)
                return false
            case let .refuse(why, detail):
                attackLog.log(
                    key: "room-refused:\(why.rawValue):" + peer.hex, "room operation refused",
                    ["room": op.roomID.hex, "from": source, "why": why.rawValue, "detail": detail])
                return false
            }
        }
        guard let root, let after else { return false }  // only a peer's operation can lack a root: it waited
        let now = nowMs
        guard
            try store.insertRoomOperation(
                StoredRoomOperation(
                    hash: op.hash, room: op.roomID,
                    sequence: Int64(clamping: op.sequence),
                    encoded: op.encoded()), at: now)
        else {
            entry.operations[op.hash] = op
            entry.resolution = resolution
            roomBook.entries[op.roomID] = entry
            return false
        }
        entry.operations[op.hash] = op
        entry.root = root
        entry.state = after
        entry.resolution = resolution
        roomBook.entries[op.roomID] = entry
        if let reason = after.rejected[op.hash] {
            log.info(
                "room operation kept but not applied",
                ["room": op.roomID.hex, "from": source, "reason": reason.rawValue])
        }
        let previous = try store.room(id: op.roomID)
        try saveRoomState(after, previous: previous, deliveredBy: peer, now: now)
        roomSyncMembershipChanged(after)
        try distribute(op, before: before, after: after, from: peer, entry: entry, now: now)
        if let rec = try store.room(id: op.roomID),
            rec
                != previous.map({
                    var p = $0
                    p.updatedAt = rec.updatedAt
                    return p
                })
        {
            log.info(
                "room updated",
                [
                    "room": after.name, "id": after.roomID.hex, "version": "\(after.version)",
                    "members": "\(after.members.count)", "status": rec.status.rawValue
                ])
            emit(.roomUpdated(rec))
        }
        try retryWaiting(room: op.roomID)
        return true
    }

    /// An operation of a room this node holds nothing of: with the other operations of that
    /// room the same peer sent (held in memory), it is an invitation once they name this
    /// node; then the create and every operation of the log that is in the graph are
    /// stored at once. Until then it waits, bounded (`RoomAdmission`).
    private func acceptUnknownRoomOperation(_ op: RoomOperation, from peer: IdentityPublicKey) throws(StoreError)
        -> Bool
    {
        let held = roomBook.waiting[peer, default: []].map(\.op).filter { $0.roomID == op.roomID && $0.hash != op.hash }
        let batch = held + [op]
        // Resolving the whole log is only worth it once something names this node.
        let me = myIdentityKey
        let namesMe = batch.contains { o in
            if case .create(_, let members, _) = o.change { return members.contains(me) }
            return o.target == me
        }
        guard namesMe, let root = batch.first(where: { $0.kind == .create }),
            let state = RoomResolution(root: root, operations: batch)?.state
        else {
            holdWaitingRoomOperation(op, from: peer)
            return false
        }
        // Stale invitations go first, so they do not count against the peer's share.
        for id in try store.forgetInvitations(before: nowMs - Int64(RoomAdmission.invitationLifetimeDays) * 86_400_000)
        {
            roomBook.entries[id] = nil
            log.info(
                "unanswered room invitation forgotten",
                ["id": id.hex, "days": "\(RoomAdmission.invitationLifetimeDays)"])
        }
        let verdict = RoomAdmission.verdict(
            for: op, before: nil, after: state, me: myIdentityKey, operationCount: 0,
            unappliedByActor: 0, invitationsFromSender: try store.invitationCount(from: peer))
        switch verdict {
        case .wait, .keep:
            holdWaitingRoomOperation(op, from: peer)
            return false
        case let .refuse(why, detail):
            attackLog.log(
                key: "room-refused:\(why.rawValue):" + peer.hex, "room operation refused",
                ["room": op.roomID.hex, "from": peer.fingerprintText, "why": why.rawValue, "detail": detail])
            roomBook.waiting[peer] = roomBook.waiting[peer]?.filter { $0.op.roomID != op.roomID }
            return false
        case .invitation:
            break
        }
        let waitingNow = Set(state.waiting)
        let keep = batch.filter { !waitingNow.contains($0.hash) }.sorted(by: RoomResolver.precedes)
        let now = nowMs
        var entry = RoomBook.Entry()
        for o in keep {
            _ = try store.insertRoomOperation(
                StoredRoomOperation(
                    hash: o.hash, room: o.roomID,
                    sequence: Int64(clamping: o.sequence),
                    encoded: o.encoded()), at: now)
            entry.operations[o.hash] = o
        }
        entry.root = root
        entry.resolution = RoomResolution(root: root, operations: keep)
        entry.state = entry.resolution?.state ?? state
        roomBook.entries[op.roomID] = entry
        roomBook.waiting[peer] = roomBook.waiting[peer]?.filter { !entry.operations.keys.contains($0.op.hash) }
        try saveRoomState(state, previous: nil, deliveredBy: peer, now: now)
        if let rec = try store.room(id: op.roomID) {
            log.info(
                "room invitation",
                [
                    "room": state.name, "id": state.roomID.hex, "from": peer.fingerprintText,
                    "members": "\(state.members.count)"
                ])
            emit(.roomUpdated(rec))
        }
        try retryWaiting(room: op.roomID)
        return true
    }

    /// This node's relation to the room the state describes.
    private func status(in s: RoomState, previous: RoomRecord?) -> RoomStatus {
        if s.hasJoined(myIdentityKey) { return .joined }
        if s.isInvited(myIdentityKey) { return .invited }
        return .left
    }

    private func saveRoomState(
        _ s: RoomState, previous: RoomRecord?, deliveredBy peer: IdentityPublicKey?,
        now: Int64
    ) throws(StoreError) {
        try store.saveRoom(roomRecord(s, previous: previous, deliveredBy: peer, now: now))
    }

    /// What the store caches of a resolved room.
    private func roomRecord(
        _ s: RoomState, previous: RoomRecord?, deliveredBy peer: IdentityPublicKey?, now: Int64
    ) -> RoomRecord {
        let status = status(in: s, previous: previous)
        let inviter = status == .invited ? (previous?.status == .invited ? previous?.inviter : peer) : nil
        return RoomRecord(
            id: s.roomID, root: s.root, name: s.name, creator: s.creator,
            createdAt: Int64(clamping: s.createdAt), version: Int64(clamping: s.version),
            members: s.members, status: status, roles: s.roles,
            joined: s.joined, onlyAdminsAdd: s.policy.onlyAdminsAdd,
            inviter: inviter, updatedAt: now)
    }

    /// Holds an operation whose parent has not arrived, in memory and bounded per peer
    /// (`RoomAdmission.maxWaitingPerSender`, `waitingTimeoutSeconds`).
    private func holdWaitingRoomOperation(_ op: RoomOperation, from peer: IdentityPublicKey) {
        let now = clock.monotonicNow()
        // Taken out while changed, so appending copies nothing.
        var list = roomBook.waiting.removeValue(forKey: peer) ?? []
        // Oldest first (appended in arrival order): the timed-out ones are a prefix.
        let expired = list.prefix { now - $0.since >= .seconds(RoomAdmission.waitingTimeoutSeconds) }.count
        if expired > 0 { list.removeFirst(expired) }
        if list.contains(where: { $0.op.hash == op.hash }) {
            roomBook.waiting[peer] = list
            return
        }
        guard list.count < RoomAdmission.maxWaitingPerSender else {
            attackLog.log(
                key: "room-waiting:" + peer.hex, "room operation dropped: too many waiting for a parent",
                ["room": op.roomID.hex, "from": peer.fingerprintText, "limit": "\(RoomAdmission.maxWaitingPerSender)"])
            roomBook.waiting[peer] = list
            return
        }
        list.append((op, now))
        roomBook.waiting[peer] = list
    }

    /// Offers the operations and messages that waited on `room` again, until none moves.
    /// Iterative, not recursive: an operation taken here may free others (a chain sent
    /// children first frees up to a whole room's log), and each would otherwise nest
    /// another call on the event loop's stack.
    private func retryWaiting(room: RoomID) throws(StoreError) {
        roomBook.roomsToRetry.insert(room)
        guard !roomBook.retrying else { return }
        roomBook.retrying = true
        defer { roomBook.retrying = false }
        while let next = roomBook.roomsToRetry.popFirst() {
            // In a known room, only operations whose parents are all held now: the others
            // would wait again, and offering each of a peer's 4,097 waiting ones again after
            // every accepted operation made a flood of junk parents quadratic.
            let held = roomBook.entries[next].flatMap { $0.root == nil ? nil : $0.operations }
            func ready(_ op: RoomOperation) -> Bool {
                op.roomID == next && (held.map { h in op.parents.allSatisfy { h[$0] != nil } } ?? true)
            }
            for (peer, list) in roomBook.waiting {
                let mine = list.filter { ready($0.op) }
                guard !mine.isEmpty else { continue }
                roomBook.waiting[peer] = roomBook.waiting[peer]?.filter { !ready($0.op) }
                for w in mine.sorted(by: { RoomResolver.precedes($0.op, $1.op) }) {
                    try acceptRoomOperation(w.op, from: peer)
                }
            }
            try releaseHeldRoomChats(room: next)
        }
    }

    /// Queues the operation (and, for newcomers, the whole log) as `RoomDistribution` says,
    /// then pumps the sessions of everyone who got something.
    private func distribute(
        _ op: RoomOperation, before: RoomState?, after: RoomState, from peer: IdentityPublicKey?,
        entry: RoomBook.Entry, now: Int64
    ) throws(StoreError) {
        let plan = boundedOperationPlan(
            RoomDistribution.plan(for: op, before: before, after: after, me: myIdentityKey, receivedFrom: peer),
            for: op, after: after)
        try store.queueRoomOperations([op.hash], for: plan.operationTo, at: now)
        if !plan.wholeLogTo.isEmpty {
            let log = entry.operations.values.sorted(by: RoomResolver.precedes).map(\.hash)
            try store.queueRoomOperations(log, for: plan.wholeLogTo, at: now)
        }
        var sessions = Set(plan.operationTo + plan.wholeLogTo)
        // A member that just joined gets the room messages that waited for it while invited.
        if let before { sessions.formUnion(after.joined.filter { !before.hasJoined($0) && $0 != myIdentityKey }) }
        for id in sessions { if let conn = activeConnection(for: id) { pump(conn) } }
    }

    // MARK: Local API (control socket)

    /// Creates a room with this node (its owner) and invites `members`; returns once the
    /// create is stored.
    func createRoom(name: String, members: [PeerRecord], policy: RoomOperation.Policy = .init()) throws -> RoomRecord {
        loop.preconditionInEventLoop()
        for p in members { if let refusal = sendRefusal(p) { throw refusal } }
        let keys = members.map(\.identity)
        guard Set(keys + [myIdentityKey]).count <= RoomLimits.maxCreateMembers else {
            throw RoomError.tooManyMembers(RoomLimits.maxCreateMembers)
        }
        let op: RoomOperation
        do {
            op = try RoomOperation.create(
                name: name, members: keys, policy: policy,
                by: self.ownIdentity.keys.identity, createdAt: UInt64(max(0, nowMs)))
        } catch { throw RoomError.invalid(error.description) }
        let rec = try storing { () throws(StoreError) in
            try acceptRoomOperation(op, from: nil)
            return try store.room(id: op.roomID)
        }
        guard let rec else { throw RoomError.notFound(op.roomID.hex) }
        return rec
    }

    /// Runs store work, turning its failure into the node's storage error.
    private func storing<T>(_ body: () throws(StoreError) -> T) throws(NodeError) -> T {
        do { return try body() } catch { throw .storage(error) }
    }

    /// Signs `change` on top of the room's heads, checks it against the rules (so the user
    /// hears why a change is not allowed instead of a silently ignored operation), stores
    /// and sends it.
    func changeRoom(_ room: RoomRecord, _ change: RoomOperation.Change) throws -> RoomRecord {
        loop.preconditionInEventLoop()
        let id = room.id
        let entry = try storing { () throws(StoreError) in try roomEntry(id) }
        guard let state = entry.state, let root = entry.root, state.isMember(myIdentityKey) else {
            throw RoomError.notMember(room)
        }
        guard entry.operations.count < RoomLimits.maxOperationsPerRoom else { throw RoomError.tooManyOperations(room) }
        let op: RoomOperation
        do {
            op = try RoomOperation.change(
                change, roomID: id, after: state.heads, by: ownIdentity.keys.identity,
                createdAt: UInt64(max(0, nowMs)))
        } catch { throw RoomError.invalid(error.description) }
        var trial = entry.resolution ?? RoomResolution(root: root, operations: Array(entry.operations.values))
        trial?.insert(op)
        if let why = trial?.state.rejected[op.hash] { throw RoomError.refused(room, change, why) }
        return try storing { () throws(StoreError) in
            try acceptRoomOperation(op, from: nil)
            return try store.room(id: room.id) ?? room
        }
    }

    /// Accepts an invitation: signs a join, after which the room's messages flow.
    func acceptInvitation(_ room: RoomRecord) throws -> RoomRecord {
        guard room.status == .invited else { throw RoomError.notInvited(room) }
        return try changeRoom(room, .join)
    }

    /// Declines an invitation: signs a leave (so the inviter's view stops showing this node
    /// as invited) and keeps nothing else of the room.
    func declineInvitation(_ room: RoomRecord) throws -> RoomRecord {
        guard room.status == .invited else { throw RoomError.notInvited(room) }
        return try changeRoom(room, .remove(myIdentityKey))
    }

    /// Queues a message to every other member of the room; returns once it is on disk.
    func sendToRoom(_ room: RoomRecord, body: String, replyTo: MessageID? = nil) throws -> StoredMessage {
        try sendManyToRoom([(room, body, replyTo)])[0].get()
    }

    /// Pipelined sends to rooms, in order: each checked, signed (consecutive room sequences
    /// per room) and queued for its recipients (`roomMessageRecipients`), all stored in one
    /// transaction, so a run of room messages costs one commit, like a run of direct ones
    /// (`sendMany`). A send that fails its checks fails alone; a failed transaction fails
    /// the run.
    func sendManyToRoom(_ sends: [(room: RoomRecord, body: String, replyTo: MessageID?)]) -> [Result<
        StoredMessage, Error
    >] {
        loop.preconditionInEventLoop()
        var results = [Result<StoredMessage, Error>?](repeating: nil, count: sends.count)
        struct Planned {
            var index: Int
            var recipients: [IdentityPublicKey]
            var signed: SignedRoomMessage?
            var message: Store.NewRoomMessage
        }
        var planned: [Planned] = []
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
                guard let state = try storing({ () throws(StoreError) in try roomEntry(id).state }),
                    state.hasJoined(myIdentityKey)
                else {
                    if room.status == .invited { throw RoomError.notJoined(room) }
                    throw RoomError.notMember(room)
                }
                if queued[id] == nil {
                    queued[id] = try storing { () throws(StoreError) in
                        try store.queuedRoomMessageCount(room: id)
                    }
                }
                guard queued[id, default: 0] < RoomDaemonLimits.maxQueuedPerRoom else {
                    throw RoomError.queueFull(room, RoomDaemonLimits.maxQueuedPerRoom)
                }
                queued[id, default: 0] += 1
                // Members known to sync rooms get it from a few of them (`RoomFanOut`), the
                // others from this node as before.
                let recipients = roomMessageRecipients(state)
                let messageID = MessageID.random()
                // Signed before it is stored, and kept in the same transaction: members that
                // sync rooms get the signed form.
                if nextSequence[id] == nil {
                    nextSequence[id] = try? store.nextRoomSequence(room: id, author: myIdentityKey)
                }
                var signed: SignedRoomMessage?
                let replyTo = send.replyTo
                if let sequence = nextSequence[id] {
                    signed = signRoomMessage(
                        id: messageID, room: id, sequence: sequence, state: state, body: send.body,
                        createdAt: createdAt, replyTo: replyTo)
                    if signed != nil { nextSequence[id] = sequence + 1 }
                }
                planned.append(
                    Planned(
                        index: i, recipients: recipients, signed: signed,
                        message: Store.NewRoomMessage(
                            id: messageID, room: id, body: send.body, createdAt: createdAt,
                            members: recipients, replyTo: replyTo,
                            signed: signed.map {
                                Store.SignedRoomMessageRow(
                                    room: id, author: myIdentityKey, sequence: $0.roomSequence,
                                    id: messageID, encoded: $0.encoded())
                            })))
            } catch {
                results[i] = .failure(error)
            }
        }
        if !planned.isEmpty {
            do {
                let stored = try store.enqueueRoomMessages(planned.map(\.message), sender: myIdentityKey)
                var pumped: Set<IdentityPublicKey> = []
                for (p, m) in zip(planned, stored) {
                    results[p.index] = .success(m)
                    if let signed = p.signed { roomSyncStoredOwn(signed, queuedFor: p.recipients) }
                    pumped.formUnion(p.recipients)
                }
                for m in pumped { if let conn = activeConnection(for: m) { pump(conn) } }
            } catch {
                for p in planned { results[p.index] = .failure(NodeError.storage(error)) }
            }
        }
        return results.map { $0 ?? .failure(NodeError.emptyBody) }
    }

    /// Finds a room by `#name`, name, or id prefix (at least 4 hex digits), `#` optional.
    func resolveRoom(_ selector: String) throws -> RoomRecord {
        let query = selector.hasPrefix("#") ? String(selector.dropFirst()) : selector
        let all: [RoomRecord]
        do { all = try store.rooms() } catch { throw NodeError.storage(error) }
        for match in [
            { (r: RoomRecord) in r.name == query },
            { (r: RoomRecord) in r.name.lowercased() == query.lowercased() }
        ] {
            let found = all.filter(match)
            // Prefer rooms we are still in: an old room we left may share the name.
            let current = found.filter(\.isMember)
            if current.count == 1 { return current[0] }
            if found.count == 1 { return found[0] }
            if found.count > 1 { throw RoomError.ambiguous(selector, found) }
        }
        let prefix = query.lowercased()
        if prefix.count >= RoomDaemonLimits.minIDPrefix, prefix.allSatisfy(\.isHexDigit) {
            let found = all.filter { $0.id.hex.hasPrefix(prefix) }
            if found.count == 1 { return found[0] }
            if found.count > 1 { throw RoomError.ambiguous(selector, found) }
        }
        throw RoomError.notFound(selector)
    }

    // MARK: Wire

    func connection(_ conn: PeerConnection, receivedRoomTraffic records: [RoomTraffic]) {
        guard let sender = activePeer(of: conn) else { return }
        // Room chats count against their author's receive quota like direct ones (issue 15):
        // what is over it is refused, not stored; operations are bounded by the room limits.
        var records = records
        let roomChats = records.compactMap { if case .chat(let c) = $0 { c } else { nil } }
        if !roomChats.isEmpty {
            let refused: [(RefusalReason, [MessageID])]
            do { (_, refused) = try judgeByQuota(roomChats, from: sender) } catch {
                // Not counted, so none is taken: nothing of this read is stored or
                // acknowledged; the sender keeps it queued for the next session.
                conn.close(reason: .normal, text: Self.uncountedCloseText)
                return
            }
            if !refused.isEmpty {
                let out = Set(refused.flatMap(\.1))
                records.removeAll { if case .chat(let c) = $0 { out.contains(c.id) } else { false } }
                sendRefusals(refused, on: conn)
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
            let outcome = try receivedSignedRoomMessages(pending, from: sender, on: conn)
            acks += outcome.acks
            receivedSigned += outcome.shown
        }
        var failed = false
        do {
            for record in records {
                switch record {
                case .operation(let op):
                    try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    try acceptRoomOperation(op, from: sender)
                    acks.append(op.hash.ackID)
                case .chat(let c):
                    try storeSigned(&signed)
                    chats.append(c)
                case .signed(let arrival):
                    try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
                    signed.append(arrival)
                case .have(let have):
                    try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    receivedRoomHave(have, from: sender)
                case .card(let card):
                    // After the operations before it: they may make its subject a member.
                    try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    receivedRoomCard(card, from: sender, on: conn)
                case .operationsHave(let have):
                    try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
                    try storeSigned(&signed)
                    try receivedRoomOperationsHave(have, from: sender, on: conn)
                }
            }
            try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
            try storeSigned(&signed)
        } catch {
            // What was stored is acknowledged and counted; the rest stays queued at the sender.
            log.error("could not store room traffic; it stays queued at the sender", ["error": "\(error)"])
            failed = true
        }
        sendAcks(acks, on: conn)
        if failed { conn.close(reason: .normal, text: Self.uncountedCloseText) }
        // Counted even when a later record failed: the receive quota's cached counts (which
        // also judge file offers) must not fall behind what the store holds.
        quotaStored(received.map { $0.body.utf8.count }, from: sender)
        if !received.isEmpty { sessionDriver.table.promote(sender) }
        for m in received + receivedSigned { emit(.messageReceived(m)) }
    }

    /// Stores consecutive room chats (one transaction per room) whose author and this node
    /// are joined members in this node's view; holds, unacknowledged, those whose author is
    /// not known as one yet; acknowledges and drops those of a room this node is not in.
    private func storeRoomChats(
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
            let state = try roomEntry(roomID).state
            switch RoomDistribution.messageVerdict(in: state, from: sender, me: myIdentityKey) {
            case .accept:
                let incoming = list.map {
                    IncomingMessage(
                        id: $0.id, sender: sender, recipient: myIdentityKey,
                        sequence: Int64(clamping: $0.sequence), createdAt: Int64(clamping: $0.createdAt), body: $0.body,
                        replyTo: $0.replyTo)
                }
                let results = try store.storeIncomingRoomMessages(incoming, room: roomID, at: now)
                acks += list.map(\.id)
                received += results.filter(\.isNew).map(\.message)
            case .hold:
                holdRoomChats(list, from: sender)
            case .notForUs:
                // Acknowledged: this node left (or never joined) the room, so a resend would
                // change nothing; the author learns of it from the room's operations.
                attackLog.log(
                    key: "room-chat:" + sender.hex + roomID.hex,
                    "room message for a room this node is not in; acknowledged and not stored",
                    ["room": roomID.hex, "from": sender.fingerprintText, "count": "\(list.count)"])
                acks += list.map(\.id)
            }
        }
    }

    /// Keeps room messages whose author is not a joined member in this node's view yet.
    /// They are not acknowledged, so the author keeps them queued and sends them again on
    /// the next session: holding them only saves that round trip.
    private func holdRoomChats(_ list: [RoomChatRecord], from sender: IdentityPublicKey) {
        var held = roomBook.heldChats[sender, default: []]
        let known = Set(held.map(\.id))
        var authorBytes = held.reduce(0) { $0 + $1.body.utf8.count }
        var totalBytes = roomBook.heldChats.values.joined().reduce(0) { $0 + $1.body.utf8.count }
        for c in list where !known.contains(c.id) {
            let size = c.body.utf8.count
            guard held.count < RoomDaemonLimits.maxHeldChatsPerAuthor,
                authorBytes + size <= RoomDaemonLimits.maxHeldChatBytesPerAuthor,
                totalBytes + size <= RoomDaemonLimits.maxHeldChatBytes
            else { break }
            held.append(c)
            authorBytes += size
            totalBytes += size
        }
        roomBook.heldChats[sender] = held
        log.info(
            "room messages from an author not (yet) a member in this node's view are held, unacknowledged",
            ["room": list[0].roomID.hex, "from": sender.fingerprintText, "held": "\(held.count)"])
    }

    /// After `room` changed: stores and acknowledges the held messages it now explains.
    private func releaseHeldRoomChats(room: RoomID) throws(StoreError) {
        guard let state = try roomEntry(room).state else { return }
        for (sender, held) in roomBook.heldChats {
            let ready = held.filter { $0.roomID == room }
            guard !ready.isEmpty,
                RoomDistribution.messageVerdict(in: state, from: sender, me: myIdentityKey) != .hold
            else { continue }
            roomBook.heldChats[sender] = held.filter { $0.roomID != room }
            // Acknowledgements go on the author's session; with none, the author resends.
            guard let conn = activeConnection(for: sender) else { continue }
            var chats = ready
            var acks: [MessageID] = []
            var received: [StoredMessage] = []
            try storeRoomChats(&chats, from: sender, acks: &acks, received: &received)
            sendAcks(acks, on: conn)
            quotaStored(received.map { $0.body.utf8.count }, from: sender)
            if !received.isEmpty { sessionDriver.table.promote(sender) }
            for m in received { emit(.messageReceived(m)) }
        }
    }

    /// The room part of an acknowledgement: ids the window knew as room traffic, and ids it
    /// did not know at all (sent on an earlier session).
    func roomTrafficAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard !ids.isEmpty, store.roomOutboxesMayHaveWork else { return }
        do {
            roomDeliveryChanged(try store.acknowledgeRoomTraffic(ids: ids, by: peer, at: nowMs))
        } catch {
            log.error("could not record room delivery; it will be sent again and de-duplicated", ["error": "\(error)"])
        }
    }

    /// Sends queued room operations to the peer of `conn`, parents first, within the window.
    func pumpRoomOperations(_ conn: PeerConnection, peer: IdentityPublicKey) {
        let handle = ObjectIdentifier(conn)
        guard let free = sessionDriver.links[handle]?.window.freeSlots, free > 0 else { return }
        let pending: [StoredRoomOperation]
        do {
            pending = try store.pendingRoomOperations(
                to: peer, limit: (sessionDriver.links[handle]?.window.count ?? 0) + free)
        } catch {
            log.error("could not read the room operation outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for stored in pending {
            guard let free = sessionDriver.links[handle]?.window.freeSlots, free > 0 else { break }
            let ackID = stored.hash.ackID
            guard sessionDriver.links[handle]?.window.isInFlight(ackID) == false else { continue }
            guard let op = try? RoomOperation.decode(stored.encoded) else {
                log.warning("stored room operation does not decode; dropped from the outbox", ["hash": stored.hash.hex])
                _ = try? store.acknowledgeRoomOperations(ackIDs: [ackID], by: peer)
                continue
            }
            // Policy bit 1 (history shared with new members) is read only by nodes with room
            // sync; an older node would take the operation for malformed and close the
            // session. It stays queued for that member until its node upgrades
            // (docs/PROTOCOL.md "Room operations").
            if Self.needsRoomSync(op), !conn.remoteFeatures.contains(.roomSync) { continue }
            guard
                sessionDriver.links[handle]?.window.admit(
                    ackID, bytes: stored.encoded.count, lane: .roomOperation, now: now) == true
            else { continue }
            conn.send(.roomOperation(op))
            // Its actor's card after it (room cards): the receiver learns the name of a
            // member it may never have a session with.
            sendRoomCard(of: op.actor, room: op.roomID, on: conn, peer: peer)
        }
    }

    /// Sends queued room messages to the peer of `conn`, in sequence order, within the window.
    func pumpRoomMessages(_ conn: PeerConnection, peer: IdentityPublicKey) {
        guard conn.isWritable, activePeer(of: conn) != nil else { return }
        let handle = ObjectIdentifier(conn)
        guard let free = sessionDriver.links[handle]?.window.freeSlots, free > 0 else { return }
        let pending: [StoredMessage]
        do {
            pending = try store.pendingRoomMessages(
                to: peer, limit: (sessionDriver.links[handle]?.window.count ?? 0) + free)
        } catch {
            log.error("could not read the room outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for m in pending {
            guard let free = sessionDriver.links[handle]?.window.freeSlots, free > 0 else { break }
            let mid = m.id
            guard let rid = m.room else { continue }
            guard
                sessionDriver.links[handle]?.window.admit(mid, bytes: m.body.utf8.count, lane: .roomChat, now: now)
                    == true
            else { continue }
            // A member that syncs rooms gets the signed form, which it may pass on.
            if conn.remoteFeatures.contains(.roomSync), let signed = signedRoomMessageForSending(m, to: peer) {
                conn.send(.roomMessage(.verified(signed)))
                continue
            }
            // A member whose node predates replies gets a plain room message.
            let replyTo = conn.remoteFeatures.contains(.conversation) ? m.replyTo : nil
            conn.send(
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
