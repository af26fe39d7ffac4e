import Foundation
import GRDB

/// An event to append to the journal (the notifications the control socket sent).
public struct NewJournalEvent: Sendable, Equatable {
    /// Unix ms.
    public var at: Int64
    /// The notification method, e.g. `message.received`.
    public var method: String
    /// What the event concerns, for subscription filters: a peer's identity hex (64
    /// characters) or, for a room's messages and updates, the room id (32); nil = everyone.
    public var peer: String?
    /// For message events: the message's row id (the event is rendered from the message).
    public var messageRowID: Int64?
    /// For other events: the notification params as JSON.
    public var params: [UInt8]?

    public init(at: Int64, method: String, peer: String?, messageRowID: Int64?, params: [UInt8]?) {
        self.at = at
        self.method = method
        self.peer = peer
        self.messageRowID = messageRowID
        self.params = params
    }
}

/// A request to journal the events of a message transaction in that same transaction:
/// `method` is the notification (e.g. `message.received`), one row per message the
/// transaction changes, whose subject is the message's room or else its peer. The rows
/// commit with the message or not at all, so a SIGKILL can never leave a stored message
/// without the event a resuming client replays (and a message transaction costs one
/// commit, not two).
public struct MessageJournal: Sendable, Equatable {
    public var method: String
    /// Unix ms the rows are stamped with (the journal's clock, which prunes by age).
    public var at: Int64

    public init(method: String, at: Int64) throws(StoreError) {
        guard !method.isEmpty, method.utf8.count <= JournalLimits.maxMethodBytes else {
            throw .invalidArgument("event method must be 1...\(JournalLimits.maxMethodBytes) bytes")
        }
        try InputValidation.requireNoNUL(method, "event method")
        self.method = method
        self.at = at
    }
}

/// An event as stored, with the id it was given.
public struct JournalEvent: Sendable, Equatable {
    public var id: Int64
    public var event: NewJournalEvent
}

/// Bounds on the journal's inputs.
public enum JournalLimits {
    /// Longest method name: names are chosen in code; this only stops garbage.
    public static let maxMethodBytes = 64
    /// Largest params of one event. Non-message events (a peer's info, a key change) are
    /// well under 8 KiB; this bounds what one event can add to the database.
    public static let maxParamsBytes = 65_536
}

// The event journal: a bounded, ordered log of what the control socket notified, so a
// client can resume after the last event it saw.
extension Store {
    /// An event's subject is a peer identity or a room id; anything else is garbage.
    static func requireEventSubject(_ value: String) throws(StoreError) {
        if value.utf8.count == roomIDHexLength {
            try requireRoomID(value)
        } else {
            try InputValidation.requireIdentity(value, "event subject (a peer identity or a room id)")
        }
    }

    /// Appends `events` in order in one transaction; returns their ids (consecutive,
    /// increasing, never reused even after pruning).
    public func appendEvents(_ events: [NewJournalEvent]) throws(StoreError) -> [Int64] {
        for e in events {
            guard !e.method.isEmpty, e.method.utf8.count <= JournalLimits.maxMethodBytes else {
                throw .invalidArgument("event method must be 1...\(JournalLimits.maxMethodBytes) bytes")
            }
            try InputValidation.requireNoNUL(e.method, "event method")
            if let peer = e.peer { try Self.requireEventSubject(peer) }
            guard (e.messageRowID == nil) != (e.params == nil) else {
                throw .invalidArgument("an event has either a message row or params, not both or neither")
            }
            if let p = e.params, p.count > JournalLimits.maxParamsBytes {
                throw .invalidArgument("event params of \(p.count) bytes exceed \(JournalLimits.maxParamsBytes)")
            }
        }
        guard !events.isEmpty else { return [] }
        return try relaxedWrite { db in try self.insertEvents(db, events) }
    }

    /// The `peer` a message transaction's own event row stores (`storeIncoming` with a
    /// `MessageJournal`): "the conversation of `message_row`", which `events` reads back as
    /// the room id's or peer identity's hex, the same text the row held before. Writing
    /// the 64-character hex cost the message path a hex conversion and 63 bytes per event
    /// (issue 32 part 11); the message row names the conversation already, and a message
    /// transaction's message never changes conversation (only queued outgoing messages are
    /// readdressed, by a key change, and their event is written at delivery). Never a valid
    /// subject (`requireEventSubject`), so no event appended from outside can mean it.
    static let ownMessageConversation = ""

    /// `events`' peer column: `ownMessageConversation` resolved through the message's
    /// party (NULL once the message is gone: a replay skips such an event anyway).
    static let eventPeerColumn = """
        CASE WHEN event.peer = '\(ownMessageConversation)' THEN (
            SELECT lower(hex(party.key)) FROM message JOIN party ON party.id = COALESCE(message.room, message.peer)
            WHERE message.row_id = event.message_row)
        ELSE event.peer END
        """

    /// The journal's row, six parameters per row (`insertEvents`).
    static let eventInsertShapes = RowBatch.shapes(
        "INSERT INTO event (id, at, method, peer, message_row, params) VALUES "
    ) {
        _ in "(?, ?, ?, ?, ?, ?)"
    }

    /// Appends `events` inside the caller's transaction (already validated, or built by the
    /// store itself); returns their ids.

    func insertEvents(_ db: Database, _ events: [NewJournalEvent]) throws -> [Int64] {
        guard !events.isEmpty else { return [] }
        // No RETURNING (a temporary table per statement; see reserveSequenceNumbers).
        try adjustCounter(db, .lastEventID, by: events.count)
        let last = try counterValue(db, .lastEventID)
        let first = last - Int64(events.count) + 1
        // Many rows per statement, as the message rows they describe (`RowBatch`).
        for chunk in RowBatch.chunks(events.count) {
            var values: [DirectValue] = []
            values.reserveCapacity(6 * chunk.count)
            for k in chunk {
                let e = events[k]
                values.append(.int(first + Int64(k)))
                values.append(.int(e.at))
                values.append(.text(e.method))
                values.append(.optionalText(e.peer))
                values.append(.optionalInt(e.messageRowID))
                values.append(.optionalBlob(e.params))
            }
            try heldShape(db, .event, rows: chunk.count).executeDirect(values)
        }
        return Array(first...last)
    }

    /// Events with `after < id <= through`, ascending, at most `limit` (clamped to
    /// `StoreLimits.maximumPageSize`).
    public func events(after: Int64, through: Int64, limit: Int) throws(StoreError) -> [JournalEvent] {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0, after < through else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT id, at, method, \(Self.eventPeerColumn), message_row, params FROM event
                    WHERE id > ? AND id <= ? ORDER BY id LIMIT ?
                    """)
            var result: [JournalEvent] = []
            let rows = try Row.fetchCursor(statement, arguments: [after, through, limit])
            while let row = try rows.next() {
                let messageRow = try row.optionalInt64(4)
                result.append(
                    JournalEvent(
                        id: try row.int64(0),
                        event: NewJournalEvent(
                            at: try row.int64(1), method: try row.text(2), peer: try row.optionalText(3),
                            messageRowID: messageRow, params: messageRow == nil ? try row.bytes(5) : nil)))
            }
            return result
        }
    }

    /// `prunedThrough`: every event with an id up to it is gone; `last`: the newest id
    /// ever given (0 when none). Events `prunedThrough < id <= last` are all kept.
    public func eventBounds() throws(StoreError) -> (prunedThrough: Int64, last: Int64) {
        try read { db in
            let statement = try db.cachedStatement(sql: "SELECT value FROM counter WHERE name = ?")
            guard let pruned = try Int64.fetchOne(statement, arguments: [Schema.Counter.eventsPrunedThrough]),
                pruned >= 0
            else {
                throw UnexpectedStoredValue(
                    column: "counter.\(Schema.Counter.eventsPrunedThrough)", value: "missing or negative")
            }
            let last = try storedCounters(db)[CounterLedger.Name.lastEventID.rawValue]
            guard last >= 0 else {
                throw UnexpectedStoredValue(
                    column: "\(Schema.messageCounterTable).\(Schema.Counter.lastEventID)", value: String(last))
            }
            return (pruned, last)
        }
    }

    /// Deletes the oldest events so that at most `keepLast` remain and none is older than
    /// `notBefore` (Unix ms). Deletion is always a prefix of ids, so what remains is
    /// contiguous. Returns the new `prunedThrough`.
    @discardableResult
    public func pruneEvents(keepLast: Int, notBefore: Int64) throws(StoreError) -> Int64 {
        guard keepLast >= 0 else { throw .invalidArgument("keepLast must not be negative") }
        return try relaxedWrite { db in
            let counter = try db.cachedStatement(sql: "SELECT value FROM counter WHERE name = ?")
            let last = try counterValue(db, .lastEventID)
            let pruned = try Int64.fetchOne(counter, arguments: [Schema.Counter.eventsPrunedThrough]) ?? 0
            var through = max(pruned, last - Int64(keepLast))
            // Everything before the oldest event that is recent enough goes: ids grow with
            // time (an event written while the clock was wrong may go a little early or
            // late). Scanned in id order from the oldest kept, so it reads only the events
            // it prunes, and the journal needs no index on `at` (one b-tree per event
            // written: the journal-without-time-index-v1 migration).
            let firstRecent = try Int64.fetchOne(
                db, sql: "SELECT id FROM event WHERE id > ? AND at >= ? ORDER BY id LIMIT 1",
                arguments: [pruned, notBefore])
            through = max(through, firstRecent.map { $0 - 1 } ?? last)
            guard through > pruned else { return pruned }
            try db.execute(sql: "DELETE FROM event WHERE id <= ?", arguments: [through])
            try db.execute(
                sql: "UPDATE counter SET value = ? WHERE name = ?",
                arguments: [through, Schema.Counter.eventsPrunedThrough])
            return through
        }
    }
}
