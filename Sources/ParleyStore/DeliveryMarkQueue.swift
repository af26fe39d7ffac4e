import ParleyCore

/// One acknowledgement's delivery mark, waiting for a transaction to ride on.
struct PendingDeliveryMark: Sendable, Equatable {
    var ids: [MessageID]
    var recipient: IdentityPublicKey
    /// Unix ms when the acknowledgement arrived (the messages' `deliveredAt`).
    var at: Int64
}

/// Delivery marks folded into the message path's next write transaction (issue 32 part 10,
/// docs/ARCHITECTURE.md "One message through the code"): an acknowledgement's mark is
/// queued here, written by the next `enqueue` or `storeIncoming` (or alone when the driver
/// flushes it), and what it changed is handed back only once that transaction committed.
///
/// The transaction's steps, like `CounterLedger`'s: `carry` takes what is pending into the
/// open transaction, `applied` records what it changed, then `committed` (the changes
/// become `takeCommitted`'s) or `rolledBack` (the marks are pending again, first, and
/// nothing they changed is reported). Pure bookkeeping, under `Store.lock`.
struct DeliveryMarkQueue {
    private(set) var pending: [PendingDeliveryMark] = []
    /// Ids in `pending` (repeats counted): what the driver's bound looks at.
    private(set) var pendingIDCount = 0
    /// Taken by the open transaction.
    private var carried: [PendingDeliveryMark] = []
    /// What the open transaction's marks changed.
    private var applied: [DeliveredMessage] = []
    /// Changed by committed transactions, not yet taken.
    private var done: [DeliveredMessage] = []
    /// The journal rows the marks write, whichever transaction carries them: set by the
    /// driver just before (its journal stores what it held first, so ids keep the order in
    /// which events are sent).
    var journal: MessageJournal?

    var hasPending: Bool { !pending.isEmpty }

    mutating func add(_ mark: PendingDeliveryMark) {
        guard !mark.ids.isEmpty else { return }
        pending.append(mark)
        pendingIDCount += mark.ids.count
    }

    /// Inside a transaction: every pending mark, now the transaction's.
    mutating func carry() -> [PendingDeliveryMark] {
        let taken = pending
        carried += taken
        pending.removeAll()
        pendingIDCount = 0
        return taken
    }

    mutating func applied(_ changed: [DeliveredMessage]) { applied += changed }

    mutating func committed() {
        guard !carried.isEmpty else { return }
        carried.removeAll()
        done += applied
        applied.removeAll()
    }

    /// The transaction is undone: its marks wait again, ahead of any queued since.
    mutating func rolledBack() {
        guard !carried.isEmpty else { return }
        pending = carried + pending
        pendingIDCount = pending.reduce(0) { $0 + $1.ids.count }
        carried.removeAll()
        applied.removeAll()
    }

    /// Pending marks given up (a lone flush failed): their messages stay queued and are sent
    /// again at the next session; the peer de-duplicates and acknowledges again.
    mutating func dropPending() {
        pending.removeAll()
        pendingIDCount = 0
    }

    mutating func takeCommitted() -> [DeliveredMessage] {
        defer { done.removeAll() }
        return done
    }
}
