import GRDB
import ParleyCore

// Read state: which incoming messages this node's user has read (and which read receipts
// still have to be sent), and which outgoing messages the recipient reported as read.
extension Store {
    /// Unread incoming direct messages per conversation (the sender's key); room
    /// messages count per room (`roomUnreadCount`). Served by the partial `message_unread`
    /// index, so it costs the number of unread rows.
    public func unreadCounts() throws(StoreError) -> [IdentityPublicKey: Int] {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT MIN(row_id), (SELECT key FROM party WHERE party.id = sender), COUNT(*) FROM message
                    WHERE incoming = 1 AND read_at IS NULL AND room IS NULL GROUP BY sender
                    """)
            // A sender whose key is damaged is left out (`decodeRows`), not every count.
            let counts = try self.decodeRows(statement, [], table: "message") { row in
                (try row.identityKeyBlob(1, column: "party.key"), Int(try row.int64(2)))
            }
            return Dictionary(counts.records, uniquingKeysWith: +)
        }
    }

    /// Marks the unread incoming messages from `peer` with `rowID <= upTo` (all of them if
    /// `upTo` is nil) read at `at`. With `queueReceipts` each one is also flagged as owing
    /// the sender a read receipt (`pendingReadReceipts`). Returns the ids of the messages
    /// that changed, in log order; already-read messages are left alone. One transaction.
    /// A damaged row (its id is not a message id, `UnreadableRow`) is marked read but owes
    /// no receipt and is not returned: one such row must not keep the person from marking
    /// the conversation read (`parley read` does it for every page it shows).
    public func markIncomingRead(from peer: IdentityPublicKey, upTo: Int64?, at: Int64, queueReceipts: Bool)
        throws(StoreError) -> [MessageID]
    {
        try write { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE message SET read_at = ?,
                        receipt_pending = CASE WHEN length(id) = \(MessageID.length) THEN ? ELSE 0 END
                    WHERE sender = \(Self.partyOfKeyParameter) AND incoming = 1 AND read_at IS NULL AND room IS NULL AND row_id <= ?
                    RETURNING row_id, id
                    """)
            return try self.markedRead(
                update, [at, queueReceipts ? 1 : 0, Self.keyBlob(peer), upTo ?? Int64.max])
        }
    }

    /// Ids of messages from `peer` that were read here and whose read receipt is still
    /// owed, oldest first, at most `limit` (clamped to `StoreLimits.maximumPageSize`).
    public func pendingReadReceipts(to peer: IdentityPublicKey, limit: Int) throws(StoreError) -> [MessageID] {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT row_id, id FROM message WHERE sender = \(Self.partyOfKeyParameter) AND receipt_pending = 1 ORDER BY row_id LIMIT ?
                    """)
            // A damaged row owing a receipt is stepped over (it owes none it can name), so
            // it never holds back the receipts after it.
            return try self.decodeRows(
                statement, [Self.keyBlob(peer), limit + Self.unreadableRowsSteppedOverPerRead], table: "message",
                keep: limit
            ) { try $0.idBlob(MessageID.self, 1, column: "message.id") }.records
        }
    }

    /// Every peer that is owed at least one read receipt.
    public func peersOwedReadReceipts() throws(StoreError) -> Set<IdentityPublicKey> {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT MIN(row_id), (SELECT key FROM party WHERE party.id = sender) FROM message
                    WHERE receipt_pending = 1 GROUP BY sender
                    """)
            return Set(
                try self.decodeRows(statement, [], table: "message") {
                    try $0.identityKeyBlob(1, column: "party.key")
                }.records)
        }
    }

    /// The read receipts for these messages from `peer` were handed to a session (or are
    /// no longer wanted): stop owing them.
    public func clearPendingReadReceipts(ids: [MessageID], from peer: IdentityPublicKey) throws(StoreError) {
        guard !ids.isEmpty else { return }
        try relaxedWrite { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE message SET receipt_pending = 0 WHERE id = ? AND sender = ? AND receipt_pending = 1
                    """)
            guard let party = try Self.partyID(db, key: peer.bytes) else { return }
            for id in ids { try update.execute(arguments: [Self.idBlob(id), party]) }
        }
    }

    /// The recipient `recipient` reported these outgoing messages read at `at`. Only
    /// delivered messages to that recipient that were not yet marked read change (the
    /// caller applies the implied acknowledgement first); they are returned. One
    /// transaction.
    public func markReadByRecipient(ids: [MessageID], by recipient: IdentityPublicKey, at: Int64)
        throws(StoreError) -> [StoredMessage]
    {
        guard !ids.isEmpty else { return [] }
        return try relaxedWrite { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE message SET read_at = ?
                    WHERE id = ? AND recipient = ? AND state = 1 AND read_at IS NULL
                    RETURNING \(Self.messageColumns)
                    """)
            guard let party = try Self.partyID(db, key: recipient.bytes) else { return [] }
            var changed: [StoredMessage] = []
            for id in ids { changed += try self.fetchMessages(update, [at, Self.idBlob(id), party]) }
            return changed
        }
    }

    /// Messages by local row id (the cursor), for rendering journal events. Rows that do
    /// not exist are simply absent from the result.
    public func messages(rowIDs: [Int64]) throws(StoreError) -> [Int64: StoredMessage] {
        guard !rowIDs.isEmpty else { return [:] }
        return try read { db in
            let statement = try db.cachedStatement(sql: "SELECT \(Self.messageColumns) FROM message WHERE row_id = ?")
            var result: [Int64: StoredMessage] = [:]
            for rowID in Set(rowIDs) {
                if let m = try self.fetchMessages(statement, [rowID]).first { result[rowID] = m }
            }
            return result
        }
    }

    /// The ids an `UPDATE ... RETURNING row_id, id` marking messages read changed, in log
    /// order; a damaged row (its id is not a message id) is marked too but left out of the
    /// answer (`decodeRows`): one such row must not keep the person from marking the
    /// conversation read (`parley read` does it for every page it shows).
    func markedRead(_ update: Statement, _ arguments: StatementArguments) throws -> [MessageID] {
        let changed = try decodeRows(update, arguments, table: "message") {
            (rowID: try $0.int64(0), id: try $0.idBlob(MessageID.self, 1, column: "message.id"))
        }
        return changed.records.sorted { $0.rowID < $1.rowID }.map(\.id)
    }
}
