import Foundation
import GRDB
import ParleyCore

/// What the receive quota (ParleyNodeCore `ReceiveQuota`) needs from the store: how much
/// is kept from a peer and from everyone, which incoming ids are already stored (a resent
/// message we have is acknowledged, never refused), and deleting a conversation so the
/// user can make room (issue 15).
extension Store {
    /// Messages and body bytes stored from one sender: its incoming messages, and every
    /// edit, delete and reaction row it made this store keep (direct ones, and signed room
    /// changes it authored, whoever handed them over; refused ones too, kept without text
    /// to de-duplicate). Each such row counts as one message and its kept text as bytes, so
    /// a stream of changes is bounded by the same receive quota as chats.
    public func incomingUsage(from sender: IdentityPublicKey) throws(StoreError) -> (messages: Int, bytes: Int) {
        try incomingUsage(
            where: "AND m.peer = \(Self.partyOfKeyParameter)", arguments: [Self.keyBlob(sender)],
            actionsWhere: "AND a.author = ?", actionArguments: [sender.hex])
    }

    /// Messages and body bytes stored from all senders together (messages and actions).
    public func incomingUsageTotal() throws(StoreError) -> (messages: Int, bytes: Int) {
        try incomingUsage(where: "", arguments: [], actionsWhere: "", actionArguments: [])
    }

    /// Messages and body bytes stored from all strangers together: senders the user has
    /// not verified and never wrote a direct message to (the receive quota's strangers,
    /// whose class has a bounded share; issue 29, M2). Their actions count too.
    public func incomingUsageFromStrangers() throws(StoreError) -> (messages: Int, bytes: Int) {
        try incomingUsage(
            where: """
                AND NOT EXISTS (
                    SELECT 1 FROM peer p JOIN party s ON s.id = m.sender
                    WHERE p.identity = lower(hex(s.key)) AND p.trust = 'verified')
                AND NOT EXISTS (SELECT 1 FROM message o WHERE o.peer = m.peer AND o.incoming = 0)
                """,
            arguments: [],
            actionsWhere: """
                AND NOT EXISTS (SELECT 1 FROM peer p WHERE p.identity = lower(a.author) AND p.trust = 'verified')
                AND NOT EXISTS (
                    SELECT 1 FROM message o JOIN party s ON s.id = o.peer
                    WHERE s.key = \(Schema.unhexFunction)(a.author) AND o.incoming = 0)
                """,
            actionArguments: [])
    }

    /// Count and body bytes of the incoming messages that also match `filter` (SQL over
    /// `message m`, starting with AND; a fixed string of ours, never user input), plus the
    /// incoming action rows that match `actionsFilter` (over `message_action a`).
    private func incomingUsage(
        where filter: String, arguments: StatementArguments, actionsWhere actionsFilter: String,
        actionArguments: StatementArguments
    ) throws(StoreError) -> (messages: Int, bytes: Int) {
        try read { db in
            let row = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), coalesce(sum(length(b.body)), 0) FROM message m
                    JOIN message_body b ON b.row_id = m.row_id
                    WHERE m.incoming = 1 \(filter)
                    """, arguments: arguments)
            let actions = try Row.fetchOne(
                db,
                sql: """
                    SELECT count(*), coalesce(sum(length(a.body)), 0) FROM message_action a
                    WHERE a.direction = 'incoming' \(actionsFilter)
                    """, arguments: actionArguments)
            let messages: Int = row?[0] ?? 0
            let bytes: Int = row?[1] ?? 0
            let actionRows: Int = actions?[0] ?? 0
            let actionBytes: Int = actions?[1] ?? 0
            return (messages + actionRows, bytes + actionBytes)
        }
    }

    /// How many edit, delete and reaction rows from `author` this store keeps (direct and
    /// signed room ones, applied or refused): what a flood of changes grows; for tests and
    /// diagnostics.
    public func incomingActionRows(from author: IdentityPublicKey) throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM message_action WHERE author = ? AND direction = 'incoming'",
                arguments: [author.hex]) ?? 0
        }
    }

    /// Whether the user ever wrote `peer` a direct message (kept now): the receive quota's
    /// correspondent, whom a fresh key cannot become on its own.
    public func hasWritten(to peer: IdentityPublicKey) throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT 1 FROM message WHERE peer = \(Self.partyOfKeyParameter) AND incoming = 0 LIMIT 1
                    """, arguments: [Self.keyBlob(peer)])
                != nil
        }
    }

    /// Whether any message (either direction, direct or room) was exchanged with `peer`:
    /// a peer that never exchanged one is a stranger when the session table is full.
    public func hasMessages(with peer: IdentityPublicKey) throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(
                db, sql: "SELECT 1 FROM message WHERE peer = \(Self.partyOfKeyParameter) LIMIT 1",
                arguments: [Self.keyBlob(peer)]) != nil
        }
    }

    /// Those of `ids` already stored from `sender`.
    public func storedIncomingIDs(_ ids: [MessageID], from sender: IdentityPublicKey) throws(StoreError)
        -> Set<MessageID>
    {
        guard !ids.isEmpty else { return [] }
        return try read { db in
            let party = try Self.partyID(db, key: sender.bytes)
            let lookup = try db.cachedStatement(sql: "SELECT 1 FROM message WHERE id = ? AND sender = ?")
            // An edit, delete or reaction it made us keep is as stored as a message.
            let action = try db.cachedStatement(
                sql: "SELECT 1 FROM message_action WHERE author = ? AND id = ? AND direction = 'incoming'")
            var found: Set<MessageID> = []
            for id in ids {
                if try party.flatMap({ try Bool.fetchOne(lookup, arguments: [Self.idBlob(id), $0]) }) != nil
                    || Bool.fetchOne(action, arguments: [sender.hex, id.hex]) != nil
                {
                    found.insert(id)
                }
            }
            return found
        }
    }

    /// Deletes the direct conversation with `peer`: every message to and from it (queued
    /// ones too: they will not be sent), their bodies and refusals, and the peer's edits,
    /// deletes and reactions kept from it. Returns how many were
    /// deleted. Room messages are not part of it.
    @discardableResult
    public func deleteConversation(with peer: IdentityPublicKey) throws(StoreError) -> Int {
        try write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT row_id, state FROM message WHERE peer = \(Self.partyOfKeyParameter) AND room IS NULL
                    """,
                arguments: [Self.keyBlob(peer)])
            var byState: [String: Int] = [:]
            for row in rows {
                let code: Int64 = row["state"]
                byState[MessageState(code: code)?.rawValue ?? "", default: 0] += 1
            }
            let ids: [Int64] = rows.map { $0["row_id"] }
            for start in stride(from: 0, to: ids.count, by: 500) {
                let part = Array(ids[start..<min(start + 500, ids.count)])
                let marks = databaseQuestionMarks(count: part.count)
                let args = StatementArguments(part)
                try db.execute(sql: "DELETE FROM message_refusal WHERE row_id IN (\(marks))", arguments: args)
                // Reactions name their message's row (a foreign key): they go first, or a
                // conversation anyone reacted in could not be forgotten.
                try db.execute(sql: "DELETE FROM reaction WHERE message_row IN (\(marks))", arguments: args)
                try db.execute(sql: "DELETE FROM message_body WHERE row_id IN (\(marks))", arguments: args)
                try db.execute(sql: "DELETE FROM message WHERE row_id IN (\(marks))", arguments: args)
            }
            // The peer's edits, deletes and reactions in the direct conversation go with it:
            // they count against its receive quota, so forgetting the conversation makes room
            // (a resend of one is judged anew: its target is gone, so it is refused by the rules).
            try db.execute(
                sql: """
                    DELETE FROM message_action WHERE author = ? AND direction = 'incoming' AND room IS NULL
                    """, arguments: [peer.hex])
            try self.adjustCounter(db, .queued, by: -(byState["queued"] ?? 0))
            try self.adjustCounter(db, .delivered, by: -(byState["delivered"] ?? 0))
            try self.adjustCounter(db, .received, by: -(byState["received"] ?? 0))
            return ids.count
        }
    }

    /// Records that `recipient` refused to store these of our queued messages (`reason` is
    /// the wire code). They stay queued. Returns the messages concerned (ids that name no
    /// queued message of ours to that peer are ignored).
    public func recordRefusal(ids: [MessageID], by recipient: IdentityPublicKey, reason: Int, at: Int64)
        throws(StoreError) -> [StoredMessage]
    {
        guard !ids.isEmpty else { return [] }
        return try relaxedWrite { db in
            let find = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message INDEXED BY \(Schema.Index.messageIDSender)
                    WHERE id = ? AND recipient = ? AND state = 0 AND room IS NULL
                    """)
            let upsert = try db.cachedStatement(
                sql: """
                    INSERT INTO message_refusal (row_id, reason, at) VALUES (?, ?, ?)
                    ON CONFLICT (row_id) DO UPDATE SET reason = excluded.reason, at = excluded.at
                    """)
            guard let party = try Self.partyID(db, key: recipient.bytes) else { return [] }
            var refused: [StoredMessage] = []
            for id in ids {
                for message in try self.fetchMessages(find, [Self.idBlob(id), party]) {
                    upsert.setUncheckedArguments([message.rowID, reason, at])
                    try upsert.execute()
                    refused.append(message)
                }
            }
            return refused
        }
    }

    /// The last refusal of one of our messages: its wire reason code and when (unix ms).
    public func refusal(ofMessageRow row: Int64) throws(StoreError) -> (reason: Int, at: Int64)? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT reason, at FROM message_refusal WHERE row_id = ?", arguments: [row])
                .map { ($0["reason"], $0["at"]) }
        }
    }
}
