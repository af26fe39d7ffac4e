import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Room operations: kept or not (`RoomAdmission`, its inputs from `RoomIntake`), stored,
/// the room resolved incrementally, forwarded as `RoomDistribution` says; those that wait
/// for a parent held (`WaitingRoomOperations`) and offered again when their room moves.
extension RoomDriver {
    /// Takes a verified operation (received from `peer`, or this node's own when nil):
    /// `RoomAdmission` says whether it is kept; a kept one is stored, the room re-resolved,
    /// the operation forwarded as `RoomDistribution` says, observers told, and operations
    /// and messages that waited for it retried. Returns false for a duplicate, a refused or
    /// a waiting operation (refusals are logged). Throws only when the store fails.
    @discardableResult
    func accept(_ op: RoomOperation, from peer: IdentityPublicKey?) throws(StoreError) -> Bool {
        var entry = try entry(op.roomID)
        if entry.operations[op.hash] != nil { return false }
        let source = peer?.fingerprintText ?? "local"
        if case .create = op.change, let root = entry.root, root.hash != op.hash {
            // The room id is the create's hash: another create cannot name it (short of a
            // 128-bit collision), so this is a forgery or a bug.
            host?.logAttack(
                key: "room-create:" + op.roomID.hex, "a second create for a known room refused",
                ["room": op.roomID.hex, "from": source, "actor": Fingerprint(op.actor).description])
            return false
        }
        if entry.root == nil, let peer { return try acceptUnknownRoom(op, from: peer) }
        let root: RoomOperation?
        if let r = entry.root { root = r } else if case .create = op.change { root = op } else { root = nil }
        let before = entry.state
        let capsBefore = entry.cappedRemovals
        // The room with `op`: decided against the incremental resolution, not replayed.
        var resolution =
            entry.resolution ?? root.flatMap { RoomResolution(root: $0, operations: Array(entry.operations.values)) }
        resolution?.insert(op)
        let after = resolution?.state
        if let peer {
            let verdict = RoomAdmission.verdict(
                for: op, before: before, after: after, me: me,
                operationCount: entry.operations.count,
                unappliedByActor: RoomIntake.unapplied(by: op.actor, among: entry.operations.values, before: before),
                invitationsFromSender: before == nil ? try store.invitationCount(from: peer) : 0)
            switch verdict {
            case .keep, .invitation:
                break
            case .wait:
                holdWaiting(op, from: peer)
                return false
            case let .refuse(why, detail):
                host?.logAttack(
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
                    hash: op.hash, room: op.roomID, sequence: Int64(clamping: op.sequence), encoded: op.encoded()),
                at: now)
        else {
            entry.operations[op.hash] = op
            entry.resolution = resolution
            book.entries[op.roomID] = entry
            return false
        }
        entry.operations[op.hash] = op
        entry.root = root
        entry.state = after
        entry.resolution = resolution
        book.entries[op.roomID] = entry
        if let reason = after.rejected[op.hash] {
            log.info(
                "room operation kept but not applied",
                ["room": op.roomID.hex, "from": source, "reason": reason.rawValue])
        }
        let previous = try store.room(id: op.roomID)
        try saveState(after, previous: previous, deliveredBy: peer, now: now)
        host?.roomSyncMembershipChanged(after)
        if capsBefore != entry.cappedRemovals {
            host?.roomCappedRemovalsChanged(op.roomID, from: capsBefore, to: entry.cappedRemovals)
        }
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
            host?.emit(.roomUpdated(rec))
        }
        try retryWaiting(room: op.roomID)
        return true
    }

    /// An operation of a room this node holds nothing of: with the other operations of that
    /// room the same peer sent (held in memory), it is an invitation once they name this
    /// node; then the create and every operation of the log that is in the graph are
    /// stored at once. Until then it waits, bounded (`RoomAdmission`). The log is resolved
    /// when `UnknownRoomResolutionPacing` says (first naming, then each doubling; the rest
    /// on the tick), not after every operation.
    private func acceptUnknownRoom(_ op: RoomOperation, from peer: IdentityPublicKey) throws(StoreError) -> Bool {
        let batch = book.waiting.others(of: op.roomID, from: peer, except: op.hash) + [op]
        let root = RoomIntake.invitationRoot(of: batch, me: me)
        let key = UnknownRoomResolutionPacing.Key(peer: peer, room: op.roomID)
        guard
            book.unknownRoomPacing.arrived(key, size: batch.count, namesMe: root != nil, now: clock.monotonicNow()),
            let root
        else {
            holdWaiting(op, from: peer)
            return false
        }
        return try resolveUnknownRoom(batch, root: root, op: op, from: peer)
    }

    /// Resolves an unknown room's log as `peer` sent it (`op`: the latest of it): stored as
    /// an invitation if it invites this node; otherwise `op` waits with the rest.
    @discardableResult
    private func resolveUnknownRoom(
        _ batch: [RoomOperation], root: RoomOperation, op: RoomOperation, from peer: IdentityPublicKey
    ) throws(StoreError) -> Bool {
        let key = UnknownRoomResolutionPacing.Key(peer: peer, room: op.roomID)
        guard let state = RoomResolution(root: root, operations: batch)?.state else {
            book.unknownRoomPacing.resolved(key, size: batch.count)
            holdWaiting(op, from: peer)
            return false
        }
        // Stale invitations go first, so they do not count against the peer's share.
        for id in try store.forgetInvitations(before: nowMs - Int64(RoomAdmission.invitationLifetimeDays) * 86_400_000)
        {
            book.entries[id] = nil
            log.info(
                "unanswered room invitation forgotten",
                ["id": id.hex, "days": "\(RoomAdmission.invitationLifetimeDays)"])
        }
        let verdict = RoomAdmission.verdict(
            for: op, before: nil, after: state, me: me, operationCount: 0,
            unappliedByActor: 0, invitationsFromSender: try store.invitationCount(from: peer))
        switch verdict {
        case .wait, .keep:
            book.unknownRoomPacing.resolved(key, size: batch.count)
            holdWaiting(op, from: peer)
            return false
        case let .refuse(why, detail):
            host?.logAttack(
                key: "room-refused:\(why.rawValue):" + peer.hex, "room operation refused",
                ["room": op.roomID.hex, "from": peer.fingerprintText, "why": why.rawValue, "detail": detail])
            book.waiting.forget(room: op.roomID, from: peer)
            book.unknownRoomPacing.forget(key)
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
                    hash: o.hash, room: o.roomID, sequence: Int64(clamping: o.sequence), encoded: o.encoded()),
                at: now)
            entry.operations[o.hash] = o
        }
        entry.root = root
        entry.resolution = RoomResolution(root: root, operations: keep)
        entry.state = entry.resolution?.state ?? state
        book.entries[op.roomID] = entry
        book.waiting.forget(Set(entry.operations.keys), from: peer)
        book.unknownRoomPacing.forget(key)
        try saveState(state, previous: nil, deliveredBy: peer, now: now)
        if let rec = try store.room(id: op.roomID) {
            log.info(
                "room invitation",
                [
                    "room": state.name, "id": state.roomID.hex, "from": peer.fingerprintText,
                    "members": "\(state.members.count)"
                ])
            host?.emit(.roomUpdated(rec))
        }
        try retryWaiting(room: op.roomID)
        return true
    }

    /// Holds an operation whose parent has not arrived (`WaitingRoomOperations`).
    private func holdWaiting(_ op: RoomOperation, from peer: IdentityPublicKey) {
        switch book.waiting.hold(op, from: peer, now: clock.monotonicNow()) {
        case .held, .alreadyWaiting:
            break
        case .overLimit(let limit):
            host?.logAttack(
                key: "room-waiting:" + peer.hex, "room operation dropped: too many waiting for a parent",
                ["room": op.roomID.hex, "from": peer.fingerprintText, "limit": "\(limit)"])
        case .overTotal(let limit):
            host?.logAttack(
                key: "room-waiting-all:" + peer.hex,
                "room operation dropped: too many waiting for a parent from all peers, and this peer has its share",
                ["room": op.roomID.hex, "from": peer.fingerprintText, "limit": "\(limit)"])
        case .heldDisplacing(let other):
            host?.logAttack(
                key: "room-waiting-all:" + other.hex,
                "waiting room operation dropped to make room for another peer's: this peer has the most waiting",
                ["from": other.fingerprintText, "limit": "\(RoomAdmission.maxWaitingInAll)"])
        }
    }

    /// The daemon's periodic tick (`Node.keepaliveTick`, every `KeepalivePolicy.tickInterval`):
    /// operations that waited `RoomAdmission.waitingTimeoutSeconds` for a parent are dropped
    /// from every peer. Without it they went only when some peer's next operation was held,
    /// so a peer that vanished kept its share in memory until then.
    /// Unknown rooms' logs that grew since their last resolution and whose sender went
    /// quiet are resolved (`UnknownRoomResolutionPacing.due`): an invitation that arrived
    /// before a parent of it is taken within a tick or two of the log's end.
    func tick(now: MonotonicInstant) {
        book.waiting.expire(now: now)
        let held = book.waiting.rooms()
        for key in book.unknownRoomPacing.keys
        where held[key.peer]?.contains(key.room) != true || book.entries[key.room]?.root != nil {
            book.unknownRoomPacing.forget(key)  // its operations expired, were dropped or taken
        }
        for key in book.unknownRoomPacing.due(now: now) {
            let batch = book.waiting.log(of: key.room, from: key.peer)
            guard let root = RoomIntake.invitationRoot(of: batch, me: me), let latest = batch.last else {
                book.unknownRoomPacing.forget(key)
                continue
            }
            do {
                try resolveUnknownRoom(batch, root: root, op: latest, from: key.peer)
            } catch {
                log.error("room store failed", ["room": key.room.hex, "error": "\(error)"])
            }
        }
    }

    /// Offers the operations and messages that waited on `room` again, until none moves.
    /// Iterative, not recursive: an operation taken here may free others (a chain sent
    /// children first frees up to a whole room's log), and each would otherwise nest
    /// another call on the event loop's stack.
    private func retryWaiting(room: RoomID) throws(StoreError) {
        book.roomsToRetry.insert(room)
        guard !book.retrying else { return }
        book.retrying = true
        defer { book.retrying = false }
        while let next = book.roomsToRetry.popFirst() {
            let held = book.entries[next].flatMap { $0.root == nil ? nil : $0.operations }
            for (peer, operations) in book.waiting.takeReady(room: next, held: held) {
                for op in operations { try accept(op, from: peer) }
            }
            try releaseHeldChats(room: next)
        }
    }

    /// Queues the operation (and, for newcomers, the whole log) as `RoomDistribution` says,
    /// then pumps the sessions of everyone who got something.
    private func distribute(
        _ op: RoomOperation, before: RoomState?, after: RoomState, from peer: IdentityPublicKey?,
        entry: RoomBook.Entry, now: Int64
    ) throws(StoreError) {
        let planned = RoomDistribution.plan(for: op, before: before, after: after, me: me, receivedFrom: peer)
        let plan = host?.boundedOperationPlan(planned, for: op, after: after) ?? planned
        try store.queueRoomOperations([op.hash], for: plan.operationTo, at: now)
        if !plan.wholeLogTo.isEmpty {
            let log = entry.operations.values.sorted(by: RoomResolver.precedes).map(\.hash)
            try store.queueRoomOperations(log, for: plan.wholeLogTo, at: now)
        }
        var sessions = Set(plan.operationTo + plan.wholeLogTo)
        // A member that just joined gets the room messages that waited for it while invited.
        if let before { sessions.formUnion(after.joined.filter { !before.hasJoined($0) && $0 != me }) }
        for id in sessions { if let link = host?.activeConnection(for: id) { host?.pump(link) } }
    }
}
