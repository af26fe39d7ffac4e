import Foundation
import GRDB
import ParleyCore

// Outbox, inbox and history. Batch methods are one transaction each: the daemon batches
// work per event-loop tick, and one fsync per batch is what makes throughput possible.
extension Store {
    /// Column list every message query selects from `message` (also in RETURNING), in the
    /// order `decodeMessage` reads. The body comes from `message_body` (see the
    /// message-bodies-v1 migration).
    static let messageColumns = messageColumns(of: "message")

    /// `messageColumns` for a query that names the message table `table` (an alias).
    static func messageColumns(of table: String) -> String {
        [
            "row_id", "id", "incoming", "(SELECT key FROM party WHERE party.id = \(table).sender)",
            "(SELECT key FROM party WHERE party.id = \(table).recipient)", "sequence", "created_at",
            "(SELECT body FROM message_body WHERE message_body.row_id = \(table).row_id)",
            "state", "delivered_at", "received_at", "read_at",
            "(SELECT key FROM party WHERE party.id = \(table).room)", "reply_to", "edited_at", "deleted_at"
        ]
        .map { $0.hasPrefix("(") ? $0 : "\(table).\($0)" }
        .joined(separator: ", ")
    }

    /// The first of `chunk` whose id its sender already has stored (earlier chunks of the
    /// same batch included) or that repeats one earlier in `chunk`: what made a multi-row
    /// insert fail on the message key (the failed statement left none of its rows).
    static func firstDuplicate(_ db: Database, _ chunk: ArraySlice<NewOutgoingMessage>, sender: Int64) throws
        -> MessageID?
    {
        let probe = try db.cachedStatement(sql: "SELECT 1 FROM message WHERE id = ? AND sender = ?")
        var seen: Set<MessageID> = []
        for message in chunk {
            var stored = false
            try probe.queryDirect([.blob(message.id.bytes), .int(sender)]) { _ in stored = true }
            if stored || !seen.insert(message.id).inserted { return message.id }
        }
        return nil
    }

    /// Stores the body of the message just inserted as `row` (same transaction).
    static func insertBody(_ db: Database, row: Int64, body: String) throws {
        let statement = try db.cachedStatement(sql: "INSERT INTO message_body (row_id, body) VALUES (?, ?)")
        try statement.executeDirect([.int(row), .utf8Blob(body)])
    }

    // MARK: - Own sequence numbers

    /// Reserves `count` consecutive sequence numbers from this node's persistent counter.
    /// The first ever is 1; a number is never handed out twice, even across crashes (with
    /// `.full` durability, even across power loss).
    public func nextSequenceNumbers(count: Int) throws(StoreError) -> ClosedRange<Int64> {
        guard count > 0 else { throw .invalidArgument("sequence number count must be positive, got \(count)") }
        return try write { db in try self.reserveSequenceNumbers(db, count: count) }
    }

    func reserveSequenceNumbers(_ db: Database, count: Int) throws -> ClosedRange<Int64> {
        // The counter moves in the `CounterLedger` (written once before COMMIT) and its
        // value comes from the ledger, read from the row only once after a rollback or an
        // open; not UPDATE ... RETURNING: SQLite builds a temporary table for every
        // RETURNING statement (~18,000 instructions per message in callgrind).
        try adjustCounter(db, .lastSequence, by: count)
        let last = try counterValue(db, .lastSequence)
        guard last >= Int64(count) else {
            throw UnexpectedStoredValue(column: "counter.\(Schema.Counter.lastSequence)", value: String(last))
        }
        return (last - Int64(count) + 1)...last
    }

    // MARK: - Outgoing

    /// Queues `messages` from `sender` (this node's identity), assigning consecutive
    /// sequence numbers in array order. One transaction, durable when it returns — or,
    /// with group commit running, once `whenDurable` says so (answer the client only then);
    /// a duplicate message id fails the whole batch with `.conflict`. Keys and ids are
    /// typed, so they are bound as the BLOBs the table holds with nothing to check.
    public func enqueue(_ messages: [NewOutgoingMessage], sender: IdentityPublicKey) throws(StoreError)
        -> [StoredMessage]
    {
        guard !messages.isEmpty else { return [] }
        return try write(feeding: .writeCommitting, deferringSync: true) { db in
            // Delivery marks waiting for a transaction ride on this one (Store+DeliveryMarks.swift).
            try self.carryDeliveryMarks(db)
            let sequences = try self.reserveSequenceNumbers(db, count: messages.count)
            let senderParty = try self.party(db, key: sender.bytes)
            var stored: [StoredMessage] = []
            stored.reserveCapacity(messages.count)
            // Many rows per statement (`RowBatch`): rows and bodies a chunk at a time.
            for chunk in RowBatch.chunks(messages.count) {
                var values: [DirectValue] = []
                values.reserveCapacity(6 * chunk.count)
                for k in chunk {
                    let message = messages[k]
                    values.append(.blob(message.id.bytes))
                    values.append(.int(senderParty))
                    values.append(.int(try self.party(db, key: message.recipient.bytes)))
                    values.append(.int(sequences.lowerBound + Int64(k)))
                    values.append(.int(message.createdAt))
                    values.append(.optionalBlob(message.replyTo?.bytes))
                }
                do {
                    try self.heldShape(db, .outgoingMessage, rows: chunk.count).executeDirect(values)
                } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                    // The statement undid its rows; name the id (stored before, or twice in this batch).
                    let id = try Self.firstDuplicate(db, messages[chunk], sender: senderParty)
                    throw StoreError.conflict(
                        "message id \(id?.hex ?? "(unknown)") from \(sender.hex) is already stored")
                }
                let firstRow = try self.insertedMessageRows(db, count: chunk.count) {
                    messages[chunk.lowerBound + $0].body
                }
                for k in chunk {
                    let message = messages[k]
                    stored.append(
                        StoredMessage(
                            rowID: firstRow + Int64(k - chunk.lowerBound), id: message.id, direction: .outgoing,
                            sender: sender, recipient: .peer(message.recipient),
                            sequence: sequences.lowerBound + Int64(k), createdAt: message.createdAt,
                            body: message.body, state: .queued, replyTo: message.replyTo))
                }
            }
            try self.adjustCounter(db, .queued, by: messages.count)
            return stored
        }
    }

    /// Undelivered messages to `recipient` with a sequence above `afterSequence`, oldest
    /// sequence first, at most `limit` (clamped to `StoreLimits.maximumPageSize`). The
    /// outbox pump passes the last sequence it already sent on a session, so it never
    /// re-reads what is in flight.
    public func pendingOutgoing(to recipient: IdentityPublicKey, afterSequence: Int64 = 0, limit: Int)
        throws(StoreError) -> [StoredMessage]
    {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            guard let party = try Self.partyID(db, key: recipient.bytes) else { return [] }
            // `state = 0` is a literal so SQLite can use the partial outbox index.
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message
                    WHERE recipient = ? AND state = 0 AND sequence > ? ORDER BY sequence LIMIT ?
                    """)
            // Damaged rows are stepped over (asked for beyond `limit`, never kept): a page of
            // them alone would leave the pump's cursor where it is and stall every later
            // message to this peer. A damaged row stays queued (nothing is lost); it is
            // never sent.
            return try self.fetchMessages(
                statement, [party, afterSequence, limit + Self.unreadableRowsSteppedOverPerRead], keep: limit)
        }
    }

    /// Every peer with undelivered direct messages, and how many. Queued rows whose
    /// recipient is damaged are left out (and told to `unreadableRows`): the daemon reads
    /// this at start, and one such row must not keep it from counting every other queue.
    public func pendingRecipients() throws(StoreError) -> [IdentityPublicKey: Int] {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT MIN(row_id), (SELECT key FROM party WHERE party.id = recipient), COUNT(*) FROM message
                    WHERE state = 0 GROUP BY recipient
                    """)
            var result: [IdentityPublicKey: Int] = [:]
            let groups = try self.decodeRows(statement, [], table: "message") { row -> (MessageParty, Int) in
                let bytes = try row.bytes(1)
                guard let party = MessageParty(storedBytes: bytes) else {
                    throw UnexpectedStoredValue(column: "message.recipient", value: "\(bytes.count) bytes")
                }
                return (party, Int(try row.int64(2)))
            }
            // A room's queued messages are counted per member (`room_delivery`), not here.
            for case let (.peer(key), count) in groups.records { result[key, default: 0] += count }
            return result
        }
    }

    /// Marks the queued messages with these ids, addressed to `recipient`, delivered at
    /// `at`. Returns only the messages that changed state: an ack repeated, or naming
    /// someone else's message, changes nothing. Malformed ids are ignored (they match
    /// nothing). One transaction. Per id: one index probe for the row, one UPDATE by row;
    /// nothing else of the message is read back (`DeliveredMessage`).
    public func markDelivered(ids: [String], by recipient: String, at: Int64) throws(StoreError)
        -> [DeliveredMessage]
    {
        try InputValidation.requireIdentity(recipient, "recipient")
        guard let key = IdentityPublicKey(hex: recipient) else { return [] }
        return try markDelivered(ids.compactMap(MessageID.init(hex:)), by: key, at: at, journal: nil)
    }

    /// `markDelivered` with typed ids (nothing to validate), and with `journal`, the
    /// delivery events written in the mark's own transaction
    /// (`DeliveredMessage.journalEventID`). The message path queues its marks instead
    /// (`queueDeliveryMarks`, Store+DeliveryMarks.swift): they ride on its next transaction.
    public func markDelivered(_ ids: [MessageID], by recipient: IdentityPublicKey, at: Int64, journal: MessageJournal?)
        throws(StoreError) -> [DeliveredMessage]
    {
        guard !ids.isEmpty else { return [] }
        return try relaxedWrite { db in
            try self.applyDeliveryMarks(
                db, [PendingDeliveryMark(ids: ids, recipient: recipient, at: at)], journal: journal)
        }
    }

    /// `applyDeliveryMarks`' statements, built once (an interpolated string was built again
    /// for every mark, ~1,600 instructions one in flight).
    static let deliveryFindSQL = """
        SELECT row_id, (SELECT key FROM party WHERE party.id = room)
        FROM message INDEXED BY \(Schema.Index.messageIDSender)
        WHERE id = ? AND recipient = ? AND state = 0
        """
    static let deliveryUpdateSQL = "UPDATE message SET state = 1, delivered_at = ? WHERE row_id = ?"

    /// Inside a write transaction: marks each mark's queued messages with these ids,
    /// addressed to its recipient, delivered; the ones that changed. Per id: one index probe
    /// for the row, one UPDATE by row; nothing else of the message is read back
    /// (`DeliveredMessage`). The counters move and, with `journal`, the events are written
    /// in the same transaction.
    func applyDeliveryMarks(_ db: Database, _ marks: [PendingDeliveryMark], journal: MessageJournal?) throws
        -> [DeliveredMessage]
    {
        // Find, then update by row_id: cheaper than UPDATE ... RETURNING, which makes
        // SQLite build a temporary table for every single ack.
        // INDEXED BY: without statistics SQLite would pick the outbox index on recipient
        // and scan every queued message per ack, quadratic in a big batch.
        let find = try db.cachedStatement(sql: Self.deliveryFindSQL)
        let update = try db.cachedStatement(sql: Self.deliveryUpdateSQL)
        var changed: [DeliveredMessage] = []
        for mark in marks {
            guard let party = try self.knownParty(db, key: mark.recipient.bytes) else { continue }
            let recipient = MessageParty.peer(mark.recipient)
            changed.reserveCapacity(changed.count + mark.ids.count)
            for id in mark.ids {
                // Read whole before updating (the same id twice in one ack finds it once).
                let first = changed.count
                try find.queryDirect([.blob(id.bytes), .int(party)]) { row in
                    changed.append(
                        DeliveredMessage(
                            rowID: row.int64(0), id: id, recipient: recipient,
                            room: row.optionalBytes(1).flatMap(RoomID.init(bytes:)),
                            deliveredAt: mark.at))
                }
                for d in changed[first...] {
                    try update.executeDirect([.int(mark.at), .int(d.rowID)])
                }
            }
        }
        guard !changed.isEmpty else { return [] }
        try self.adjustCounter(db, .queued, by: -changed.count)
        try self.adjustCounter(db, .delivered, by: changed.count)
        if let journal {
            // The peer as `ownMessageConversation`, as `storeIncoming`'s rows: `events()`
            // reads it back through the message (its room, or its recipient, which a
            // delivered message keeps: only queued ones are readdressed), with no hex
            // built per event and 63 bytes less per row (issue 32 part 12).
            let eventIDs = try self.insertEvents(
                db,
                changed.map {
                    NewJournalEvent(
                        at: journal.at, method: journal.method, peer: Self.ownMessageConversation,
                        messageRowID: $0.rowID,
                        params: nil)
                })
            for (k, id) in eventIDs.enumerated() { changed[k].journalEventID = id }
        }
        return changed
    }

    /// Readdresses every undelivered message for `oldRecipient` to `newRecipient`, inside
    /// `acceptKeyChange`'s transaction. Sequence numbers and ids are kept. Returns how many moved.
    static func retarget(_ db: Database, from oldRecipient: IdentityPublicKey, to newRecipient: IdentityPublicKey)
        throws -> Int
    {
        guard oldRecipient != newRecipient, let old = try partyID(db, key: oldRecipient.bytes) else { return 0 }
        let new = try ensureParty(db, key: newRecipient.bytes)
        let update = try db.cachedStatement(
            sql: """
                UPDATE message SET recipient = ?1, peer = ?1 WHERE recipient = ?2 AND state = 0
                """)
        try update.execute(arguments: [new, old])
        return db.changesCount
    }

    // MARK: - Incoming

    /// Stores messages received from peers at local time `at`, in one transaction: durable
    /// when it returns, or with group commit running once `whenDurable` says so (acknowledge
    /// only then). De-duplicates by (sender, id): a message already stored comes back as the existing
    /// row with `isNew` false, so a retransmission after a lost ack is harmless. Ids and
    /// keys are typed: bound as the BLOBs the table holds, nothing to validate.
    ///
    /// With `journal`, each new message's event is written in the same transaction
    /// (`StoredMessage.journalEventID`); a duplicate gets none.
    public func storeIncoming(_ messages: [IncomingMessage], at: Int64, journal: MessageJournal? = nil)
        throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    {
        try storeChecked(messages, at: at, journal: journal)
    }

    /// `storeIncoming` for chats from one peer as its session decoded them.
    public func storeIncoming(
        _ chats: [ReceivedChat], from sender: IdentityPublicKey, to recipient: IdentityPublicKey, at: Int64,
        journal: MessageJournal?
    ) throws(StoreError) -> [(message: StoredMessage, isNew: Bool)] {
        try storeChecked(
            chats.map {
                IncomingMessage(
                    id: $0.id, sender: sender, recipient: recipient, sequence: $0.sequence,
                    createdAt: $0.createdAt, body: $0.body, replyTo: $0.replyTo)
            }, at: at, journal: journal)
    }

    /// The stored row of an incoming message, by (id, sender): looked up only when a chunk
    /// met a message stored before (its SQL is long, and GRDB's cache hashes it per lookup).
    static let storedIncomingQuery = "SELECT \(messageColumns) FROM message WHERE id = ? AND sender = ?"

    private func storeChecked(_ messages: [IncomingMessage], at: Int64, journal: MessageJournal?)
        throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    {
        guard !messages.isEmpty else { return [] }
        return try write(feeding: .writeCommitting, deferringSync: true) { db in
            // Delivery marks waiting for a transaction ride on this one (Store+DeliveryMarks.swift).
            try self.carryDeliveryMarks(db)
            // A batch comes from one session: the same sender and recipient in every row, so
            // the two last lookups answer nearly all (an equal key's bytes share one buffer,
            // so comparing them is a pointer check).
            var recent: [(key: IdentityPublicKey, id: Int64)] = []
            recent.reserveCapacity(2)
            func party(_ key: IdentityPublicKey) throws -> Int64 {
                for r in recent where r.key == key { return r.id }
                let id = try self.party(db, key: key.bytes)
                if recent.count == 2 { recent.removeFirst() }
                recent.append((key, id))
                return id
            }
            var results: [(message: StoredMessage, isNew: Bool)] = []
            results.reserveCapacity(messages.count)
            var newCount = 0
            func stored(_ message: IncomingMessage, row: Int64) -> StoredMessage {
                StoredMessage(
                    rowID: row, id: message.id, direction: .incoming,
                    sender: message.sender, recipient: .peer(message.recipient), sequence: message.sequence,
                    createdAt: message.createdAt, body: message.body, state: .received,
                    receivedAt: at, replyTo: message.replyTo)
            }
            // Many rows per statement (`RowBatch`); a chunk with a message stored already
            // fails on the message key and goes row by row (below).
            for chunk in RowBatch.chunks(messages.count) {
                var senders: [Int64] = []
                senders.reserveCapacity(chunk.count)
                var values: [DirectValue] = []
                values.reserveCapacity(7 * chunk.count)
                for k in chunk {
                    let message = messages[k]
                    let sender = try party(message.sender)
                    senders.append(sender)
                    values.append(.blob(message.id.bytes))
                    values.append(.int(sender))
                    values.append(.int(try party(message.recipient)))
                    values.append(.int(message.sequence))
                    values.append(.int(message.createdAt))
                    values.append(.int(at))
                    values.append(.optionalBlob(message.replyTo?.bytes))
                }
                do {
                    try self.heldShape(db, .incomingMessage, rows: chunk.count).executeDirect(values)
                } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
                    // One was stored before (a retransmission after a lost ack), or one id
                    // came twice: the statement undid its rows; this chunk goes row by row,
                    // a row stored already coming back as stored.
                    for (offset, k) in chunk.enumerated() {
                        let message = messages[k]
                        try db.cachedStatement(sql: Self.incomingInsertOrSkip)
                            .executeDirect(Array(values[(7 * offset)..<(7 * offset + 7)]))
                        if db.changesCount == 1 {
                            let row = db.lastInsertedRowID
                            try Self.insertBody(db, row: row, body: message.body)
                            results.append((stored(message, row: row), true))
                            newCount += 1
                        } else {
                            let held = try self.fetchMessageRows(
                                db.cachedStatement(sql: Self.storedIncomingQuery),
                                [Data(message.id.bytes), senders[offset]])
                            if let old = held.records.first {
                                results.append((old, false))
                            } else if let damaged = held.unreadable.first {
                                // Stored before, and damaged since: still a duplicate (acknowledged,
                                // not stored twice), told as it arrived; the sender's outbox must
                                // not stall on our damaged copy.
                                results.append((stored(message, row: damaged.rowID), false))
                            } else {
                                // The insert conflicted on exactly this key inside this transaction.
                                throw UnexpectedStoredValue(column: "message.id", value: message.id.hex)
                            }
                        }
                    }
                    continue
                }
                let firstRow = try self.insertedMessageRows(db, count: chunk.count) {
                    messages[chunk.lowerBound + $0].body
                }
                for k in chunk {
                    results.append((stored(messages[k], row: firstRow + Int64(k - chunk.lowerBound)), true))
                }
                newCount += chunk.count
            }
            try self.adjustCounter(db, .received, by: newCount)
            if let journal, newCount > 0 {
                let fresh = results.indices.filter { results[$0].isNew }
                let eventIDs = try self.insertEvents(
                    db,
                    fresh.map { k in
                        NewJournalEvent(
                            at: journal.at, method: journal.method, peer: Self.ownMessageConversation,
                            messageRowID: results[k].message.rowID, params: nil)
                    })
                for (k, id) in zip(fresh, eventIDs) { results[k].message.journalEventID = id }
            }
            return results
        }
    }

    // MARK: - History

    /// History in local order (ascending `rowID`), optionally only with one `peer` (the
    /// sender of incoming, the recipient of outgoing messages).
    ///
    /// Rows strictly after `cursor` and strictly before `before`. Without `before` this is
    /// the FIRST `limit` such rows (paging forward); with it, the LAST `limit` (paging
    /// backward from `before`); either way returned ascending. `limit` is clamped to
    /// `StoreLimits.maximumPageSize`.
    public func messages(peer: IdentityPublicKey?, after cursor: Int64?, before: Int64? = nil, limit: Int)
        throws(StoreError) -> [StoredMessage]
    {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        let lower = cursor ?? Int64.min
        let upper = before ?? Int64.max
        return try read { db in
            // A peer's history is the direct conversation: room messages are listed by room.
            let range =
                "row_id > ? AND row_id < ?"
                + (peer == nil ? "" : " AND peer = \(Self.partyOfKeyParameter) AND room IS NULL")
            let sql =
                before == nil
                ? "SELECT \(Self.messageColumns) FROM message WHERE \(range) ORDER BY row_id LIMIT ?"
                : """
                SELECT * FROM (SELECT \(Self.messageColumns) FROM message WHERE \(range)
                ORDER BY row_id DESC LIMIT ?) ORDER BY row_id
                """
            let statement = try db.cachedStatement(sql: sql)
            var arguments: [any DatabaseValueConvertible] = [lower, upper]
            if let peer { arguments.append(Self.keyBlob(peer)) }
            arguments.append(limit)
            return try self.fetchMessages(statement, StatementArguments(arguments))
        }
    }

    /// The message with this id; if several senders happened to choose the same id, the
    /// first stored. Use `message(id:sender:)` to be exact.
    public func message(id: MessageID) throws(StoreError) -> StoredMessage? {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message WHERE id = ? ORDER BY row_id LIMIT 1
                    """)
            return try self.fetchMessages(statement, [Data(id.bytes)]).first
        }
    }

    /// The message with this id from this sender.
    public func message(id: MessageID, sender: IdentityPublicKey) throws(StoreError) -> StoredMessage? {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message
                    WHERE id = ? AND sender = (SELECT id FROM party WHERE key = ?)
                    """)
            return try self.fetchMessages(statement, [Data(id.bytes), Data(sender.bytes)]).first
        }
    }

    /// Totals by state, from counters kept in step with every change (no table scan).
    public func counts() throws(StoreError) -> (queued: Int, delivered: Int, received: Int) {
        try read { db in
            let values = try storedCounters(db)
            func count(_ name: CounterLedger.Name) throws -> Int {
                let value = values[name.rawValue]
                guard value >= 0, let count = Int(exactly: value) else {
                    throw UnexpectedStoredValue(
                        column: "\(Schema.messageCounterTable).\(name.column)", value: String(value))
                }
                return count
            }
            return (try count(.queued), try count(.delivered), try count(.received))
        }
    }

    // MARK: - Helpers

    /// Adds `delta` to a counter. Inside the store's transactions the delta is gathered in
    /// the `CounterLedger` and written with the others by one statement before `COMMIT`
    /// (`inTransaction`); outside them (none on the message path), at once.
    func adjustCounter(_ db: Database, _ name: CounterLedger.Name, by delta: Int) throws {
        guard delta != 0 else { return }
        if counterLedger.isOpen {
            counterLedger.add(Int64(delta), to: name)
            return
        }
        let update = try db.cachedStatement(
            sql: "UPDATE \(Schema.messageCounterTable) SET \(name.column) = \(name.column) + ? WHERE id = 1")
        // The row moved outside the ledger: what it remembers is stale (a sequence number
        // handed out twice otherwise); the next transaction reads the row again.
        counterLedger.rolledBack()
        try update.executeDirect([.int(Int64(delta))])
    }

    /// A counter's value, its pending delta included; the row is read only when the ledger
    /// does not remember the committed values (after an open or a rollback). A missing row
    /// is a damaged store.
    func counterValue(_ db: Database, _ name: CounterLedger.Name) throws -> Int64 {
        if counterLedger.isOpen, let value = counterLedger.value(name) { return value }
        let values = try storedCounters(db)
        guard counterLedger.isOpen else { return values[name.rawValue] }
        for counter in CounterLedger.Name.allCases { counterLedger.learn(values[counter.rawValue], for: counter) }
        return counterLedger.value(name) ?? values[name.rawValue]
    }

    /// The stored (committed, inside a transaction before its flush) counters, in
    /// `CounterLedger.Name` order.
    func storedCounters(_ db: Database) throws -> [Int64] {
        var values: [Int64] = []
        try transactionStatements(db).counterRead.queryDirect([]) { row in
            values = CounterLedger.Name.allCases.map { row.int64(Int32($0.rawValue)) }
        }
        guard values.count == CounterLedger.Name.allCases.count else {
            throw UnexpectedStoredValue(column: Schema.messageCounterTable, value: "missing")
        }
        return values
    }

    /// The messages `statement` selects (with `messageColumns`), a damaged row left out
    /// (`decodeRows`: told to `unreadableRows`, the daemon logs it once): one damaged row
    /// never fails a lookup, a list or a write that reads rows back. With `keep`, stops once
    /// that many decoded (a read that asked SQLite for more, to step over damaged rows).
    func fetchMessages(_ statement: Statement, _ arguments: StatementArguments, keep: Int? = nil) throws
        -> [StoredMessage]
    {
        try fetchMessageRows(statement, arguments, keep: keep).records
    }

    /// The same, and which rows were left out, for a read whose answer names them.
    func fetchMessageRows(_ statement: Statement, _ arguments: StatementArguments, keep: Int? = nil) throws
        -> DecodedRows<StoredMessage>
    {
        try decodeRows(statement, arguments, table: "message", keep: keep, Self.decodeMessage)
    }

    /// Reads a row selected with `messageColumns`.
    static func decodeMessage(_ row: Row) throws -> StoredMessage {
        let stateCode = try row.int64(8)
        guard let state = MessageState(code: stateCode) else {
            throw UnexpectedStoredValue(column: "message.state", value: String(stateCode))
        }
        let idBytes = try row.bytes(1)
        guard let id = MessageID(bytes: idBytes) else {
            throw UnexpectedStoredValue(column: "message.id", value: "\(idBytes.count) bytes")
        }
        let senderBytes = try row.bytes(3)
        guard senderBytes.count == IdentityPublicKey.length, let sender = try? IdentityPublicKey(bytes: senderBytes)
        else {
            throw UnexpectedStoredValue(column: "message.sender", value: "\(senderBytes.count) bytes")
        }
        let recipientBytes = try row.bytes(4)
        guard let recipient = MessageParty(storedBytes: recipientBytes) else {
            throw UnexpectedStoredValue(column: "message.recipient", value: "\(recipientBytes.count) bytes")
        }
        func optionalID<ID: FixedLengthID>(_ index: Int, _ column: String) throws -> ID? {
            guard let bytes = try row.optionalBytes(index) else { return nil }
            guard let id = ID(bytes: bytes) else {
                throw UnexpectedStoredValue(column: column, value: "\(bytes.count) bytes")
            }
            return id
        }
        return StoredMessage(
            rowID: try row.int64(0),
            id: id,
            direction: try row.int64(2) == 0 ? .outgoing : .incoming,
            sender: sender,
            recipient: recipient,
            sequence: try row.int64(5),
            createdAt: try row.int64(6),
            body: try row.utf8Blob(7),
            state: state,
            deliveredAt: try row.optionalInt64(9),
            receivedAt: try row.optionalInt64(10),
            readAt: try row.optionalInt64(11),
            room: try optionalID(12, "message.room"),
            replyTo: try optionalID(13, "message.reply_to"),
            editedAt: try row.optionalInt64(14),
            deletedAt: try row.optionalInt64(15))
    }
}
