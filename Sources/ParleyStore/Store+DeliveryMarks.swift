import GRDB
import ParleyCore

/// Delivery marks that ride on the message path's next transaction (`DeliveryMarkQueue`,
/// issue 32 part 10). One in flight, a mark alone in its transaction cost ~68,000
/// instructions on the sender; inside the next enqueue ~36,000 (callgrind,
/// docs/BENCHMARKS.md part 10): no BEGIN/COMMIT of its own, one write of the counters' row,
/// and the pages it dirties (the counters' row, the journal's last leaf) are written to the
/// WAL once for both.
///
/// What a crash can lose: a mark not yet committed (SIGKILL, power cut). Nothing was
/// reported for it: `message.delivered` and its journal row come only from a committed
/// mark. The message is still queued after the restart, is sent again at the next session,
/// the peer stores it once (de-duplicated by id) and acknowledges it again, and the mark is
/// made then: the client sees `message.delivered` once, later. A clean stop writes every
/// pending mark (`DirectMessageDriver.flushDeliveryMarks` from `Node.stop`, and `close`).
extension Store {
    /// Queues the marks of the messages `recipient` acknowledged (`ids`), received at
    /// `at`; returns how many acknowledged ids now wait. Nothing is read or written yet.
    @discardableResult
    public func queueDeliveryMarks(_ ids: [MessageID], by recipient: IdentityPublicKey, at: Int64) -> Int {
        lock.lock()
        defer { lock.unlock() }
        deliveryMarks.add(PendingDeliveryMark(ids: ids, recipient: recipient, at: at))
        return deliveryMarks.pendingIDCount
    }

    /// Whether queued marks wait for a transaction.
    public var hasPendingDeliveryMarks: Bool {
        lock.lock()
        defer { lock.unlock() }
        return deliveryMarks.hasPending
    }

    /// The journal rows the queued marks write when a transaction carries them (their
    /// `message.delivered` events, `DeliveredMessage.journalEventID`); nil: none.
    public func journalDeliveryMarks(_ journal: MessageJournal?) {
        lock.lock()
        defer { lock.unlock() }
        deliveryMarks.journal = journal
    }

    /// Writes the queued marks now, alone in one transaction without a sync of its own
    /// (`relaxedWrite`: a crash of parleyd loses nothing committed; a power cut can lose the
    /// marks, and then the messages are sent again). If it fails the marks are given up:
    /// their messages stay queued and are sent again at the next session.
    public func flushDeliveryMarks(journal: MessageJournal?) throws(StoreError) {
        guard hasPendingDeliveryMarks else { return }
        journalDeliveryMarks(journal)
        do {
            try relaxedWrite { db in try self.carryDeliveryMarks(db) }
        } catch {
            lock.lock()
            deliveryMarks.dropPending()
            lock.unlock()
            throw error
        }
    }

    /// The journal last given for the queued marks.
    var deliveryMarkJournal: MessageJournal? {
        lock.lock()
        defer { lock.unlock() }
        return deliveryMarks.journal
    }

    /// What committed marks changed since the last call (each once), oldest first: the
    /// messages now delivered, with their journal rows' ids.
    public func takeCommittedDeliveries() -> [DeliveredMessage] {
        lock.lock()
        defer { lock.unlock() }
        return deliveryMarks.takeCommitted()
    }

    /// Inside a write transaction (under `lock`): applies every queued mark. What they
    /// changed is reported once the transaction commits (`inTransaction`).
    func carryDeliveryMarks(_ db: Database) throws {
        guard deliveryMarks.hasPending else { return }
        let marks = deliveryMarks.carry()
        deliveryMarks.applied(try applyDeliveryMarks(db, marks, journal: deliveryMarks.journal))
    }
}
