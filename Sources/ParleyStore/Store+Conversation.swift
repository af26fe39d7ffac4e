import Foundation
import GRDB
import ParleyCore

/// What an action does to its target message.
public enum MessageActionKind: String, Codable, Sendable {
    case edit, delete, react, unreact
}

/// An edit, delete or reaction as the store keeps it (ours queued or delivered, the
/// peers' received). The action tables keep hex TEXT; these are parsed in one place
/// (`StoredKeys.swift`), a damaged value is `StoreError.corrupt`.
public struct StoredAction: Sendable, Equatable {
    public var id: MessageID
    /// Who made the change.
    public var author: IdentityPublicKey
    /// The conversation: the peer ours go to or theirs came from, or the room.
    public var peer: MessageParty
    public var sequence: Int64
    public var createdAt: Int64
    /// Id and author of the message acted on.
    public var target: MessageID
    public var targetAuthor: IdentityPublicKey
    public var kind: MessageActionKind
    /// The new text of an edit (nil once the target was deleted), the reaction text of
    /// `react`/`unreact`, nil for `delete`.
    public var body: String?
    /// The room of an action on a room message; nil in a direct conversation.
    public var room: RoomID? = nil
}

/// An action of this node's user, before it has a sequence number.
public struct NewLocalAction: Sendable {
    public var id: MessageID
    /// The other party of a direct conversation, or the room of a room message.
    public var peer: MessageParty
    public var target: StoredMessage
    public var kind: MessageActionKind
    public var body: String?
    public var createdAt: Int64
    /// For a room message: every other member, each of whom is sent the action.
    public var members: [IdentityPublicKey]

    public init(
        id: MessageID, peer: MessageParty, target: StoredMessage, kind: MessageActionKind, body: String?,
        createdAt: Int64, members: [IdentityPublicKey] = []
    ) {
        self.id = id
        self.peer = peer
        self.target = target
        self.kind = kind
        self.body = body
        self.createdAt = createdAt
        self.members = members
    }
}

/// An action that arrived from `author` over its own session, already decoded.
public struct IncomingAction: Sendable {
    public var id: MessageID
    public var author: IdentityPublicKey
    public var sequence: Int64
    public var createdAt: Int64
    public var target: MessageID
    public var kind: MessageActionKind
    public var body: String?
    /// The room the action names; nil in the direct conversation with the author.
    public var room: RoomID?

    public init(
        id: MessageID, author: IdentityPublicKey, sequence: Int64, createdAt: Int64, target: MessageID,
        kind: MessageActionKind, body: String?, room: RoomID? = nil
    ) {
        self.id = id
        self.author = author
        self.sequence = sequence
        self.createdAt = createdAt
        self.target = target
        self.kind = kind
        self.body = body
        self.room = room
    }
}

/// What the store knows of an action's target, for the node's rules to judge.
public struct ActionTargetFacts: Sendable {
    public var message: StoredMessage
    /// The author's sequence of the latest edit applied.
    public var changeSequence: Int64?
    /// Reactions the action's author has on the message now.
    public var reactionsByAuthor: Int
    /// Whether the action's author already has this action's reaction on the message.
    public var hasThisReaction: Bool
}

/// One received action and what became of it.
public struct ReceivedActionOutcome: Sendable {
    public var action: IncomingAction
    /// False for a resend already stored (nothing judged, nothing changed).
    public var isNew: Bool
    /// The target after the change, when the action was applied.
    public var updated: StoredMessage?
}

/// A reaction on a message: who and what.
public struct StoredReaction: Sendable, Equatable {
    public var reactor: IdentityPublicKey
    public var reaction: String
    /// The reactor's sequence of the change that set it (a room change's `roomSequence`):
    /// whether it was written after the reactor's removal is judged by it
    /// (docs/PROTOCOL.md "Removal caps").
    public var sequence: Int64 = 0
}

extension Store {
    /// Shortest message id prefix a person may type to name a message (8 hex digits: one
    /// match in practice, even in a large history).
    public static let minimumMessageIDPrefix = 8

    /// Messages whose id starts with `prefix` (lowercase hex, 8...32 digits), at most
    /// `limit`, in local order: the caller refuses an ambiguous prefix. A damaged row with
    /// the prefix is named in `unreadable`, so the caller counts it (never picks the other
    /// message for a prefix that names two) and can say the one named is damaged.
    public func messages(idPrefix prefix: String, limit: Int = 2) throws(StoreError) -> DecodedRows<StoredMessage> {
        let prefix = prefix.lowercased()
        guard (Self.minimumMessageIDPrefix...32).contains(prefix.count),
            prefix.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw .invalidArgument("a message id is \(Self.minimumMessageIDPrefix) to 32 hex digits")
        }
        return try read { db in
            // Ids are 16 bytes: those with the prefix lie between the prefix filled up with
            // zero digits and filled up with f digits (BLOBs compare bytewise).
            let fill = 32 - prefix.count
            guard let low = Self.idBlob(prefix + String(repeating: "0", count: fill)),
                let high = Self.idBlob(prefix + String(repeating: "f", count: fill))
            else { return DecodedRows() }
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message WHERE id BETWEEN ? AND ? ORDER BY row_id LIMIT ?
                    """)
            return try self.fetchMessageRows(statement, [low, high, limit])
        }
    }

    /// Messages with exactly this id (ids are unique per sender: several senders may have
    /// chosen it), at most `limit`, in local order.
    public func messages(id: MessageID, limit: Int) throws(StoreError) -> [StoredMessage] {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: "SELECT \(Self.messageColumns) FROM message WHERE id = ? ORDER BY row_id LIMIT ?")
            return try self.fetchMessages(statement, [Self.idBlob(id), limit])
        }
    }

    /// The facts the rules need about `target` for an action by `author`.
    public func actionTargetFacts(_ target: StoredMessage, author: IdentityPublicKey, reaction: String?)
        throws(StoreError) -> ActionTargetFacts
    {
        try read { db in try Self.facts(db, target, author: author, reaction: reaction) }
    }

    static func facts(_ db: Database, _ target: StoredMessage, author: IdentityPublicKey, reaction: String?) throws
        -> ActionTargetFacts
    {
        let seq = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT change_sequence FROM message WHERE row_id = ?"),
            arguments: [target.rowID])
        let count =
            try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COUNT(*) FROM reaction WHERE message_row = ? AND reactor = ? AND present = 1
                        """), arguments: [target.rowID, author.hex]) ?? 0
        var has = false
        if let reaction {
            has =
                try Bool.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT EXISTS (SELECT 1 FROM reaction WHERE message_row = ? AND reactor = ? AND reaction = ? AND present = 1)
                            """), arguments: [target.rowID, author.hex, reaction]) ?? false
        }
        return ActionTargetFacts(message: target, changeSequence: seq, reactionsByAuthor: count, hasThisReaction: has)
    }

    /// Applies this node's own action to its store and queues it for the peer, in one
    /// transaction. Returns the target as it is now.
    public func performLocalAction(_ action: NewLocalAction, me: IdentityPublicKey, at now: Int64)
        throws(StoreError) -> StoredMessage
    {
        let room = action.target.room?.hex
        let members = Array(Set(action.members.map(\.hex))).sorted()
        return try write { db in
            let sequence = try self.reserveSequenceNumbers(db, count: 1).lowerBound
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO message_action (id, author, peer, direction, sequence, created_at, target, target_author,
                                                kind, body, state, room)
                    VALUES (?, ?, ?, 'outgoing', ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            // A room action with nobody else in the room has no one to wait for.
            let state = room != nil && members.isEmpty ? "delivered" : "queued"
            try insert.execute(arguments: [
                action.id.hex, me.hex, room ?? action.peer.hex, sequence, action.createdAt,
                action.target.id.hex, action.target.sender.hex, action.kind.rawValue,
                action.body.map { Data($0.utf8) }, state, room
            ])
            if room != nil {
                let row = db.lastInsertedRowID
                let fanOut = try db.cachedStatement(
                    sql: """
                        INSERT INTO action_delivery (action_row, member, state) VALUES (?, ?, 'queued')
                        """)
                for m in members { try fanOut.execute(arguments: [row, m]) }
            }
            try Self.apply(
                db, kind: action.kind, body: action.body, sequence: sequence, to: action.target,
                by: me, at: now)
            guard
                let updated = try self.fetchMessages(
                    db.cachedStatement(sql: "SELECT \(Self.messageColumns) FROM message WHERE row_id = ?"),
                    [action.target.rowID]
                ).first
            else { throw UnexpectedStoredValue(column: "message.row_id", value: "\(action.target.rowID)") }
            return updated
        }
    }

    /// Stores received actions (de-duplicated by author and id) and applies those `judge`
    /// allows, in one transaction. `judge` sees the target's facts (nil: no message with
    /// that id from the author or from this node in the conversation with the author).
    public func receiveActions(
        _ actions: [IncomingAction], me: IdentityPublicKey, at now: Int64,
        judge: (IncomingAction, ActionTargetFacts?) -> Bool
    ) throws(StoreError)
        -> [ReceivedActionOutcome]
    {
        guard !actions.isEmpty else { return [] }
        return try write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO message_action (id, author, peer, direction, sequence, created_at, target, target_author,
                                                kind, body, state, room)
                    VALUES (?, ?, ?, 'incoming', ?, ?, ?, ?, ?, ?, 'received', ?)
                    ON CONFLICT (author, id) DO NOTHING
                    """)
            // The target is in the direct conversation with the author: written by the
            // author to us or by us to the author, never a room message.
            let find = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message
                    WHERE id = ? AND room IS NULL AND peer = \(Self.partyOfKeyParameter)
                      AND (sender = \(Self.partyOfKeyParameter) OR sender = \(Self.partyOfKeyParameter))
                    ORDER BY row_id LIMIT 1
                    """)
            // In a room, by id within the room; the author's own message first (ids are
            // unique per sender only).
            let findInRoom = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message
                    WHERE id = ? AND room = \(Self.partyOfKeyParameter)
                    ORDER BY sender = \(Self.partyOfKeyParameter) DESC, row_id LIMIT 1
                    """)
            let byRow = try db.cachedStatement(sql: "SELECT \(Self.messageColumns) FROM message WHERE row_id = ?")
            let known = try db.cachedStatement(
                sql: "SELECT EXISTS (SELECT 1 FROM message_action WHERE author = ? AND id = ?)")
            var outcomes: [ReceivedActionOutcome] = []
            for a in actions {
                // A resend (its ack was lost): already judged and applied once.
                if try Bool.fetchOne(known, arguments: [a.author.hex, a.id.hex]) == true {
                    outcomes.append(ReceivedActionOutcome(action: a, isNew: false, updated: nil))
                    continue
                }
                let target =
                    try a.room.map { room in
                        try self.fetchMessages(
                            findInRoom, [Self.idBlob(a.target), Self.keyBlob(room), Self.keyBlob(a.author)]
                        ).first
                    }
                    ?? self.fetchMessages(
                        find,
                        [Self.idBlob(a.target), Self.keyBlob(a.author), Self.keyBlob(a.author), Self.keyBlob(me)]
                    ).first
                let reaction = (a.kind == .react || a.kind == .unreact) ? a.body : nil
                let facts = try target.map { try Self.facts(db, $0, author: a.author, reaction: reaction) }
                let allowed = judge(a, facts)
                // A refused action is kept without its text: only its id, to de-duplicate.
                let keptBody = allowed ? a.body : nil
                try insert.execute(arguments: [
                    a.id.hex, a.author.hex, a.author.hex, a.sequence, a.createdAt, a.target.hex,
                    (target?.sender ?? a.author).hex, a.kind.rawValue, keptBody.map { Data($0.utf8) },
                    a.room?.hex
                ])
                guard db.changesCount == 1 else {
                    outcomes.append(ReceivedActionOutcome(action: a, isNew: false, updated: nil))
                    continue
                }
                guard allowed, let target else {
                    outcomes.append(ReceivedActionOutcome(action: a, isNew: true, updated: nil))
                    continue
                }
                try Self.apply(db, kind: a.kind, body: a.body, sequence: a.sequence, to: target, by: a.author, at: now)
                outcomes.append(
                    ReceivedActionOutcome(
                        action: a, isNew: true, updated: try self.fetchMessages(byRow, [target.rowID]).first))
            }
            return outcomes
        }
    }

    /// The one place an action changes a message, for ours and the peers'.
    static func apply(
        _ db: Database, kind: MessageActionKind, body: String?, sequence: Int64,
        to target: StoredMessage, by author: IdentityPublicKey, at now: Int64
    ) throws {
        switch kind {
        case .edit:
            try db.cachedStatement(sql: "UPDATE message_body SET body = ? WHERE row_id = ?")
                .execute(arguments: [Data((body ?? "").utf8), target.rowID])
            try db.cachedStatement(sql: "UPDATE message SET edited_at = ?, change_sequence = ? WHERE row_id = ?")
                .execute(arguments: [now, sequence, target.rowID])
        case .delete:
            // The tombstone: the body, every edit's text and the reactions go; the row stays
            // so history shows where the message was and replies can say what they quoted.
            // secure_delete makes SQLite overwrite the freed bytes instead of leaving them
            // in the page (the WAL still holds them until its next checkpoint).
            try db.execute(sql: "PRAGMA secure_delete = ON")
            try db.cachedStatement(sql: "UPDATE message_body SET body = x'' WHERE row_id = ?")
                .execute(arguments: [target.rowID])
            try db.cachedStatement(sql: "UPDATE message SET deleted_at = ?, change_sequence = ? WHERE row_id = ?")
                .execute(arguments: [now, sequence, target.rowID])
            try db.cachedStatement(
                sql: """
                    UPDATE message_action SET body = NULL WHERE target_author = ? AND target = ? AND kind = 'edit'
                    """
            ).execute(arguments: [target.sender.hex, target.id.hex])
            // Our edits of it still queued are overtaken by the delete: never sent.
            try db.cachedStatement(
                sql: """
                    UPDATE action_delivery SET state = 'delivered' WHERE state = 'queued' AND action_row IN (
                        SELECT row_id FROM message_action WHERE target_author = ? AND target = ? AND kind = 'edit')
                    """
            ).execute(arguments: [target.sender.hex, target.id.hex])
            try db.cachedStatement(
                sql: """
                    UPDATE message_action SET state = 'delivered'
                    WHERE target_author = ? AND target = ? AND kind = 'edit' AND state = 'queued'
                    """
            ).execute(arguments: [target.sender.hex, target.id.hex])
            try db.cachedStatement(sql: "DELETE FROM reaction WHERE message_row = ?").execute(arguments: [target.rowID])
        case .react, .unreact:
            // A later change of the same reaction wins; an older one arriving late does not.
            try db.cachedStatement(
                sql: """
                    INSERT INTO reaction (message_row, reactor, reaction, sequence, present) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (message_row, reactor, reaction) DO UPDATE SET
                        sequence = excluded.sequence, present = excluded.present
                    WHERE excluded.sequence > reaction.sequence
                    """
            ).execute(arguments: [target.rowID, author.hex, body ?? "", sequence, kind == .react ? 1 : 0])
        }
    }

    /// Our actions for `peer` still to send, oldest first, at most `limit`. An action waits
    /// until its target (if ours) is delivered, so it never reaches the peer before the
    /// message it changes.
    public func pendingActions(to peer: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredAction] {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            // Direct actions, and room actions fanned out to this member; a room action waits
            // for its target's delivery to this member.
            let statement = try db.cachedStatement(
                sql: """
                    SELECT a.id, a.author, a.peer, a.sequence, a.created_at, a.target, a.target_author, a.kind, a.body, a.room
                    FROM message_action a
                    WHERE a.peer = ? AND a.room IS NULL AND a.state = 'queued' AND NOT EXISTS (
                        SELECT 1 FROM message m
                        WHERE m.id = \(Schema.unhexFunction)(a.target) AND m.state = 0
                          AND m.sender = (SELECT id FROM party WHERE key = \(Schema.unhexFunction)(a.target_author)))
                    UNION ALL
                    SELECT a.id, a.author, a.peer, a.sequence, a.created_at, a.target, a.target_author, a.kind, a.body, a.room
                    FROM action_delivery d JOIN message_action a ON a.row_id = d.action_row
                    WHERE d.member = ? AND d.state = 'queued' AND NOT EXISTS (
                        SELECT 1 FROM message m JOIN room_delivery r ON r.message_row = m.row_id
                        WHERE m.id = \(Schema.unhexFunction)(a.target)
                          AND m.sender = (SELECT id FROM party WHERE key = \(Schema.unhexFunction)(a.target_author))
                          AND r.member = d.member AND r.state = 'queued')
                    ORDER BY 4 LIMIT ?
                    """)
            var out: [StoredAction] = []
            let rows = try Row.fetchCursor(statement, arguments: [peer.hex, peer.hex, limit])
            while let row = try rows.next() {
                let data: Data? = row[8]
                let body = data.map { String(decoding: $0, as: UTF8.self) }
                out.append(
                    StoredAction(
                        id: try row.fixedLengthID(MessageID.self, 0, column: "message_action.id"),
                        author: try row.identityKey(1, column: "message_action.author"),
                        peer: try row.party(2, column: "message_action.peer"), sequence: try row.int64(3),
                        createdAt: try row.int64(4),
                        target: try row.fixedLengthID(MessageID.self, 5, column: "message_action.target"),
                        targetAuthor: try row.identityKey(6, column: "message_action.target_author"),
                        kind: try row.enumeration(MessageActionKind.self, 7, column: "message_action.kind"), body: body,
                        room: try row.optionalFixedLengthID(RoomID.self, 9, column: "message_action.room")))
            }
            return out
        }
    }

    /// How many of our actions to `peer` (a peer, or a room) are still queued.
    public func queuedActionCount(to peer: MessageParty) throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT COUNT(*) FROM message_action WHERE peer = ? AND state = 'queued'
                        """), arguments: [peer.hex]) ?? 0
        }
    }

    /// Whether any of our actions is still queued (for anyone): the pump skips the action
    /// query while none is.
    public func hasQueuedActions() throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM message_action WHERE state = 'queued')
                        """)) ?? false
        }
    }

    /// Marks our actions with these ids, sent to `peer`, delivered. Returns how many changed.
    @discardableResult
    public func markActionsDelivered(ids: [MessageID], by peer: IdentityPublicKey) throws(StoreError) -> Int {
        guard !ids.isEmpty else { return 0 }
        let peer = peer.hex
        return try relaxedWrite { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE message_action SET state = 'delivered'
                    WHERE direction = 'outgoing' AND peer = ? AND id = ? AND state = 'queued' AND room IS NULL
                    """)
            let memberDone = try db.cachedStatement(
                sql: """
                    UPDATE action_delivery SET state = 'delivered' WHERE member = ? AND state = 'queued' AND action_row IN (
                        SELECT row_id FROM message_action WHERE id = ? AND direction = 'outgoing' AND room IS NOT NULL)
                    """)
            // A room action is delivered once the last member acknowledged it.
            let allDone = try db.cachedStatement(
                sql: """
                    UPDATE message_action SET state = 'delivered'
                    WHERE id = ? AND direction = 'outgoing' AND room IS NOT NULL AND state = 'queued' AND NOT EXISTS (
                        SELECT 1 FROM action_delivery d WHERE d.action_row = message_action.row_id AND d.state = 'queued')
                    """)
            var changed = 0
            for id in ids.map(\.hex) {
                try update.execute(arguments: [peer, id])
                changed += db.changesCount
                try memberDone.execute(arguments: [peer, id])
                guard db.changesCount > 0 else { continue }
                changed += db.changesCount
                try allDone.execute(arguments: [id])
            }
            return changed
        }
    }

    /// The longest list of messages whose reactions query is kept compiled: a page of
    /// history (ControlLimits' default page is 50). Bounds the statement cache at this many
    /// entries for this query.
    static let cachedReactionListLength = 64

    /// The messages of `room` that hold a reaction of `reactor` set by a change above
    /// `sequence`, at most `limit`: those whose view changes when a removal cap of the
    /// reactor arrives or turns void (docs/PROTOCOL.md "Removal caps").
    public func roomMessagesReacted(room: RoomID, by reactor: IdentityPublicKey, above sequence: Int64, limit: Int)
        throws(StoreError) -> [StoredMessage]
    {
        guard limit > 0 else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message
                    WHERE room = \(Self.partyOfKeyParameter) AND row_id IN
                        (SELECT message_row FROM reaction WHERE reactor = ? AND sequence > ?)
                    ORDER BY row_id LIMIT ?
                    """)
            return try self.fetchMessages(statement, [Self.keyBlob(room), reactor.hex, sequence, limit])
        }
    }

    /// The reactions present on each of these messages (by row id).
    public func reactions(onRows rows: [Int64]) throws(StoreError) -> [Int64: [StoredReaction]] {
        guard !rows.isEmpty else { return [:] }
        return try read { db in
            var out: [Int64: [StoredReaction]] = [:]
            // Chunks keep the statement under SQLite's variable limit.
            for start in stride(from: 0, to: rows.count, by: 500) {
                let chunk = Array(rows[start..<min(start + 500, rows.count)])
                let marks = chunk.map { _ in "?" }.joined(separator: ",")
                let sql = """
                    SELECT message_row, reactor, reaction, sequence FROM reaction
                    WHERE present = 1 AND message_row IN (\(marks)) ORDER BY message_row, sequence
                    """
                // Every message shown or sent asks this, mostly for one row or a page: those
                // statements are compiled once (cached by their text, one per list length
                // up to a page), larger lists each time.
                let statement =
                    chunk.count <= Self.cachedReactionListLength
                    ? try db.cachedStatement(sql: sql) : try db.makeStatement(sql: sql)
                let cursor = try Row.fetchCursor(statement, arguments: StatementArguments(chunk))
                while let row = try cursor.next() {
                    out[try row.int64(0), default: []].append(
                        StoredReaction(
                            reactor: try row.identityKey(1, column: "reaction.reactor"), reaction: try row.text(2),
                            sequence: try row.int64(3)))
                }
            }
            return out
        }
    }

    /// Merges the search index's segments so the words of deleted messages leave the file:
    /// a contentless FTS5 index keeps a deleted row's terms until its segments are merged
    /// (see `ErasurePurgeSchedule` for when the node calls this). Nothing to do without
    /// the index.
    public func purgeErasedTextFromSearchIndex() throws(StoreError) {
        try write { db in
            guard
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'message_search')
                        """) == true
            else { return }
            try db.execute(sql: "INSERT INTO message_search (message_search) VALUES ('optimize')")
        }
    }

    /// The raw text of every action stored about a message (for tests: a delete must
    /// leave none).
    public func actionBodies(target: MessageID, targetAuthor: IdentityPublicKey) throws(StoreError) -> [String] {
        try read { db in
            try Data.fetchAll(
                db,
                sql: """
                    SELECT body FROM message_action WHERE target = ? AND target_author = ? AND body IS NOT NULL AND kind = 'edit'
                    """, arguments: [target.hex, targetAuthor.hex]
            ).map { String(decoding: $0, as: UTF8.self) }
        }
    }
}
