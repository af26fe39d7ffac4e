import ParleyCore

/// Who a room operation goes to, bounded like messages (issue 30, "Rooms as big as an
/// office"; docs/PROTOCOL.md "Operation summaries"). Without operation summaries every
/// member that keeps a new operation sends it to every other member (`RoomDistribution`),
/// so one join in a room of 500 costs each member about 500 records. Between members that
/// compare the heads of their operation graphs (features bit 5), the operation goes to a
/// few of them, each passes it on to a few more, and the summaries fill whatever is left,
/// as for messages (`RoomFanOut`): what one operation costs one member no longer grows with
/// the room.
public enum RoomOperationFanOut {
    /// Narrows `RoomDistribution`'s plan (a create's is kept: it is its members'
    /// invitation). Still sent to the target of a removal (so it
    /// learns it) and to every member not known to compare summaries (`summarizing`): the
    /// old behaviour. Of the others, at most `RoomFanOut.directRecipients` when this node is
    /// the operation's actor, `RoomFanOut.relayPeers` when it passes it on, online ones
    /// (`online`) first. The whole log goes to a newcomer that compares summaries only from
    /// the operation's actor (who invited it; every member that keeps the add would
    /// otherwise send it the log), to the others as before. An invitee does not compare
    /// summaries until it joins: what it misses meanwhile it gets then.
    public static func narrow<R: RandomNumberGenerator>(
        _ plan: RoomDistribution.OperationPlan, for op: RoomOperation, after: RoomState, me: IdentityPublicKey,
        summarizing: Set<IdentityPublicKey>, online: Set<IdentityPublicKey>, using rng: inout R
    ) -> RoomDistribution.OperationPlan {
        // A create goes to every member it lists (at most `RoomLimits.maxCreateMembers`): it
        // is their invitation, and nobody else has it yet.
        if op.kind == .create { return plan }
        var must: [IdentityPublicKey] = []
        var candidates: [IdentityPublicKey] = []
        let removed: IdentityPublicKey? = if case .remove(let t) = op.change { t } else { nil }
        for m in plan.operationTo {
            if m == removed || !summarizing.contains(m) {
                must.append(m)
            } else {
                candidates.append(m)
            }
        }
        let limit = op.actor == me ? RoomFanOut.directRecipients : RoomFanOut.relayPeers
        let chosen = RoomFanOut.choose(candidates, preferring: online, limit: limit, using: &rng)
        let to = (must + chosen).sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
        let log = op.actor == me ? plan.wholeLogTo : plan.wholeLogTo.filter { !summarizing.contains($0) }
        return RoomDistribution.OperationPlan(operationTo: to, wholeLogTo: log)
    }

    /// The heads of an operation graph: the operations no other operation held names as a
    /// parent (valid or void alike: members hold the same graph).
    public static func heads(of operations: [RoomOperationHash: RoomOperation]) -> [RoomOperationHash] {
        var named = Set<RoomOperationHash>()
        for op in operations.values { named.formUnion(op.parents) }
        return operations.keys.filter { !named.contains($0) }.sorted()
    }

    /// What a peer whose graph has `theirHeads` lacks of `operations` (those neither a head
    /// of its nor in the past of one), parents first; and whether it names a head this node
    /// does not hold (then it holds something this node lacks).
    public static func missing(
        from operations: [RoomOperationHash: RoomOperation], theirHeads: [RoomOperationHash]
    ) -> (send: [RoomOperation], theyHaveMore: Bool) {
        var seen = Set<RoomOperationHash>()
        var stack: [RoomOperationHash] = []
        var theyHaveMore = false
        for h in theirHeads {
            if operations[h] == nil { theyHaveMore = true } else { stack.append(h) }
        }
        // Bounded: each held operation is visited once.
        while let h = stack.popLast() {
            guard seen.insert(h).inserted, let op = operations[h] else { continue }
            stack.append(contentsOf: op.parents)
        }
        let send = operations.values.filter { !seen.contains($0.hash) }.sorted(by: RoomResolver.precedes)
        return (send, theyHaveMore)
    }
}

/// Bounds of operation summaries (docs/PROTOCOL.md "Operation summaries").
public enum RoomOperationSummaryLimits {
    /// A node answers a peer's summary that names a head it lacks with its own summary at
    /// most once per this interval per session and room: two members that each hold what
    /// the other lacks would otherwise answer each other's answers.
    public static let replyInterval: Duration = .seconds(5)
    /// A node reads at most one summary per this interval per session and room, and
    /// ignores the others: each may queue the room's whole log (up to 4,096 operations) for its
    /// sender, so a member repeating an empty summary would make this node send the log
    /// again and again. Honest members send one at session start, one answer, and one per
    /// `RoomSyncLimits.antiEntropyInterval`.
    public static let readInterval: Duration = .seconds(2)
    /// Operations a node queues for one session in answer to its summaries of one room, at
    /// most this many times the room's log (`operationBudget`). An honest member lacks each
    /// operation once per session (it stores what it is sent), so the whole log and as
    /// much again for what arrives during the session is more than it ever asks for; a
    /// member that repeats an old summary every `readInterval` (it acknowledges, drops and
    /// asks again) would otherwise make this node send a room's whole log, up to
    /// `RoomLimits.maxOperationsPerRoom` operations of about a KiB, every two seconds for
    /// a 48-byte record, for as long as the session lasts.
    public static let logsPerSession = 2

    /// How many of `missing` operations may still be queued for a session that has been
    /// sent `alreadySent` in answer to its summaries of a room whose log holds `logSize`.
    public static func operationBudget(logSize: Int, alreadySent: Int) -> Int {
        max(0, logsPerSession * logSize - alreadySent)
    }
}
