import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Operation summaries (issue 30; docs/PROTOCOL.md "Operation summaries"): members that
/// announce features bit 5 send a room's operations to a few of each other
/// (`RoomOperationFanOut`) and compare the heads of their operation graphs, so each fills
/// the other's gaps; the summaries ride on room sync's (`RoomSyncStateMachine.Action.sendHave`).
extension RoomSyncDriver {
    /// Sends this node's heads of `room` on `link` if its peer compares them and both are
    /// joined members in this node's view.
    func sendOperationsHave(room: RoomID, on link: Link) {
        guard link.remoteFeatures.contains(.roomOperationSummaries), let host, let peer = host.activePeer(of: link),
            let entry = try? host.roomForSync(room), let state = entry.state,
            state.hasJoined(me), state.hasJoined(peer)
        else { return }
        link.send(
            .roomOpsHave(RoomOperationsHave(roomID: room, heads: RoomOperationFanOut.heads(of: entry.operations))))
    }

    /// A member's heads of a room: what it lacks is queued for it (durably, parents first,
    /// like any operation); if it holds a head this node lacks, this node answers with its
    /// own heads (at most once per `replyInterval`), so the member sends it the rest.
    func receivedOperationsHave(_ have: RoomOperationsHave, from peer: IdentityPublicKey, on link: Link)
        throws(StoreError)
    {
        guard let host else { return }
        let entry = try host.roomForSync(have.roomID)
        guard let state = entry.state, state.hasJoined(me), state.hasJoined(peer) else {
            log.debug(
                "operation summary ignored: not both joined", ["room": have.roomID.hex, "from": peer.fingerprintText])
            return
        }
        let now = clock.monotonicNow()
        var reads = book.summariesRead[peer]?[have.roomID]
        if let last = reads?.last, now - last < RoomOperationSummaryLimits.readInterval {
            log.debug("operation summary ignored: too soon", ["room": have.roomID.hex, "from": peer.fingerprintText])
            return
        }
        reads = RoomSyncBook.SummaryReads(last: now, operationsSent: reads?.operationsSent ?? 0)
        let (missing, theyHaveMore) = RoomOperationFanOut.missing(from: entry.operations, theirHeads: have.heads)
        // Parents first, so a prefix is what the peer can use.
        let budget = RoomOperationSummaryLimits.operationBudget(
            logSize: entry.operations.count, alreadySent: reads?.operationsSent ?? 0)
        let send = missing.prefix(budget)
        if send.count < missing.count {
            log.warning(
                "a member asked for a room's operations again and again; not sent more on this session",
                ["room": have.roomID.hex, "from": peer.fingerprintText, "withheld": "\(missing.count - send.count)"])
        }
        reads?.operationsSent += send.count
        book.summariesRead[peer, default: [:]][have.roomID] = reads
        if !send.isEmpty {
            log.debug(
                "room operations a member lacks queued for it",
                ["room": have.roomID.hex, "to": peer.fingerprintText, "count": "\(send.count)"])
            try store.queueRoomOperations(send.map(\.hash), for: [peer], at: nowMs)
            host.pump(link)
        }
        guard theyHaveMore else { return }
        if let last = book.summaryReplies[peer]?[have.roomID], now - last < RoomOperationSummaryLimits.replyInterval {
            return
        }
        book.summaryReplies[peer, default: [:]][have.roomID] = now
        sendOperationsHave(room: have.roomID, on: link)
    }

    /// Narrows who a new operation is queued for (`RoomOperationFanOut`): those that do not
    /// compare summaries all, and a few of those that do, online ones first.
    func boundedOperationPlan(
        _ plan: RoomDistribution.OperationPlan, for op: RoomOperation, after: RoomState
    ) -> RoomDistribution.OperationPlan {
        var online: Set<IdentityPublicKey> = []
        for m in plan.operationTo {
            if let link = host?.activeConnection(for: m), link.remoteFeatures.contains(.roomOperationSummaries) {
                online.insert(m)
            }
        }
        var rng = SystemRandomNumberGenerator()
        return RoomOperationFanOut.narrow(
            plan, for: op, after: after, me: me, summarizing: knownSummarizingPeers(), online: online, using: &rng)
    }
}
