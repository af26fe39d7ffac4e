import Foundation
import GRDB
import ParleyCore

// Rooms: operations, resolved state, and room messages with their per-member fan-out.
// Layout and reasons: Schema+Rooms.swift.
extension Store {
    /// Room ids are 16 random bytes: 32 hex characters.
    static let roomIDHexLength = 32
    /// Operation hashes are SHA-256: 64 hex characters.
    static let operationHashHexLength = 64

    static func requireRoomID(_ value: String) throws(StoreError) {
        try InputValidation.requireLowercaseHex(value, length: roomIDHexLength, "room id")
    }

    static func requireOperationHash(_ value: String) throws(StoreError) {
        try InputValidation.requireLowercaseHex(value, length: operationHashHexLength, "room operation hash")
    }

    // MARK: - Operations

    /// Stores an operation unless one with the same hash is stored. Returns whether it was new.
    public func insertRoomOperation(_ op: StoredRoomOperation, at: Int64) throws(StoreError) -> Bool {
        try write { db in
            try db.execute(
                sql: """
                    INSERT INTO room_operation (hash, room, sequence, encoded, received_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (hash) DO NOTHING
                    """, arguments: [op.hash.hex, op.room.hex, op.sequence, Data(op.encoded), at])
            return db.changesCount == 1
        }
    }

    /// Every stored operation of a room, in (sequence, hash) order.
    public func roomOperations(room: RoomID) throws(StoreError) -> [StoredRoomOperation] {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT hash, room, sequence, encoded FROM room_operation WHERE room = ? ORDER BY sequence, hash
                    """)
            return try Self.fetchOperations(statement, [room.hex])
        }
    }

    /// How many operations are stored for a room.
    public func roomOperationCount(room: RoomID) throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM room_operation WHERE room = ?", arguments: [room.hex]) ?? 0
        }
    }

    /// How many distinct rooms have stored operations (known rooms and rooms whose create
    /// has not arrived yet).
    public func roomsWithOperationsCount() throws(StoreError) -> Int {
        try read { db in try Int.fetchOne(db, sql: "SELECT COUNT(DISTINCT room) FROM room_operation") ?? 0 }
    }

    /// Queues operations for members (idempotent: an operation already queued for a member
    /// stays queued once). Sent in (sequence, hash) order, so parents go before children.
    public func queueRoomOperations(
        _ hashes: [RoomOperationHash], for members: [IdentityPublicKey], at: Int64
    ) throws(StoreError) {
        guard !hashes.isEmpty, !members.isEmpty else { return }
        try write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO room_operation_outbox (operation, member, ack_id, queued_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (member, operation) DO NOTHING
                    """)
            let hashes = hashes.map { (hash: $0.hex, ackID: $0.ackID.hex) }
            for m in members.map(\.hex) {
                for h in hashes { try insert.execute(arguments: [h.hash, m, h.ackID, at]) }
            }
            roomOutboxesKnownEmpty = false
        }
    }

    /// Operations still to be sent to `member`, parents first, at most `limit`.
    public func pendingRoomOperations(
        to member: IdentityPublicKey, limit: Int
    ) throws(StoreError) -> [StoredRoomOperation] {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT o.hash, o.room, o.sequence, o.encoded FROM room_operation_outbox q
                    JOIN room_operation o ON o.hash = q.operation
                    WHERE q.member = ? ORDER BY o.sequence, o.hash LIMIT ?
                    """)
            return try Self.fetchOperations(statement, [member.hex, limit])
        }
    }

    /// `member` acknowledged operations by their ack ids (`RoomOperationHash.ackID`: the
    /// hash's first 16 bytes). Returns how many outbox rows were removed; unknown ids change
    /// nothing.
    @discardableResult
    public func acknowledgeRoomOperations(ackIDs: [MessageID], by member: IdentityPublicKey) throws(StoreError)
        -> Int
    {
        guard !ackIDs.isEmpty else { return 0 }
        return try write { db in
            try Self.acknowledgeRoomOperations(db, ackIDs: ackIDs.map(\.hex), by: member.hex)
        }
    }

    static func acknowledgeRoomOperations(_ db: Database, ackIDs: [String], by member: String) throws -> Int {
        let delete = try db.cachedStatement(sql: "DELETE FROM room_operation_outbox WHERE member = ? AND ack_id = ?")
        var removed = 0
        for id in ackIDs {
            try delete.execute(arguments: [member, id])
            removed += db.changesCount
        }
        return removed
    }

    /// One acknowledgement from `member` applied to both room outboxes in one transaction:
    /// operations (by ack id) and room messages (by message id). Returns the room messages
    /// now delivered to every member.
    public func acknowledgeRoomTraffic(ids: [MessageID], by member: IdentityPublicKey, at: Int64) throws(StoreError)
        -> RoomDeliveryChange
    {
        guard !ids.isEmpty else { return RoomDeliveryChange() }
        // Re-derivable bookkeeping, like `markDelivered`: a lost ack means a resend.
        return try relaxedWrite { db in
            _ = try Self.acknowledgeRoomOperations(db, ackIDs: ids.map(\.hex), by: member.hex)
            return try self.markRoomDeliveryChange(db, ids: ids, by: member, at: at)
        }
    }

    // MARK: - Resolved state

    public func room(id: RoomID) throws(StoreError) -> RoomRecord? {
        try read { db in try Self.fetchRooms(db, where: "id = ?", [id.hex]).first }
    }

    /// Every known room, by name then id.
    public func rooms() throws(StoreError) -> [RoomRecord] {
        try read { db in try Self.fetchRooms(db, where: "1", []) }
    }

    /// Writes a room's resolved state (insert or replace, members included).
    public func saveRoom(_ room: RoomRecord) throws(StoreError) {
        try InputValidation.requireNoNUL(room.name, "room name")
        let joined = Set(room.joined)
        let id = room.id.hex
        try write { db in
            try db.execute(
                sql: """
                    INSERT INTO room (id, root, name, creator, created_at, version, is_member, updated_at, status,
                                      inviter, only_admins_add)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET root = excluded.root, name = excluded.name,
                        creator = excluded.creator, created_at = excluded.created_at, version = excluded.version,
                        is_member = excluded.is_member, updated_at = excluded.updated_at, status = excluded.status,
                        inviter = excluded.inviter, only_admins_add = excluded.only_admins_add
                    """,
                arguments: [
                    id, room.root.hex, room.name, room.creator.hex, room.createdAt, room.version,
                    room.isMember ? 1 : 0, room.updatedAt, room.status.rawValue, room.inviter?.hex,
                    room.onlyAdminsAdd ? 1 : 0
                ])
            try db.execute(sql: "DELETE FROM room_member WHERE room = ?", arguments: [id])
            let insert = try db.cachedStatement(
                sql: "INSERT INTO room_member (room, identity, role, joined) VALUES (?, ?, ?, ?)")
            for m in Set(room.members) {
                try insert.execute(arguments: [
                    id, m.hex, Int((room.roles[m] ?? .member).rawValue), joined.contains(m) ? 1 : 0
                ])
            }
        }
    }

    /// Unanswered invitations that `inviter` delivered (bounded per peer).
    public func invitationCount(from inviter: IdentityPublicKey) throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM room WHERE status = 'invited' AND inviter = ?",
                arguments: [inviter.hex]) ?? 0
        }
    }

    /// Forgets the invitations nobody answered since `before` (Unix ms): their room ids.
    public func forgetInvitations(before: Int64) throws(StoreError) -> [RoomID] {
        let stale = try read { db in
            try String.fetchAll(
                db, sql: "SELECT id FROM room WHERE status = 'invited' AND updated_at < ?", arguments: [before]
            ).map { hex throws in try StoredKey.id(RoomID.self, hex, column: "room.id") }
        }
        for room in stale { try forgetInvitation(room: room) }
        return stale
    }

    /// Forgets a room whose invitation was declined or expired: its operations, their
    /// outbox, its state. A room with messages is never forgotten (only invitations are).
    public func forgetInvitation(room: RoomID) throws(StoreError) {
        let room = room.hex
        try write { db in
            guard try String.fetchOne(db, sql: "SELECT status FROM room WHERE id = ?", arguments: [room]) == "invited"
            else {
                return
            }
            try db.execute(
                sql: """
                    DELETE FROM room_operation_outbox WHERE operation IN (SELECT hash FROM room_operation WHERE room = ?)
                    """, arguments: [room])
            try db.execute(sql: "DELETE FROM room_operation WHERE room = ?", arguments: [room])
            try db.execute(sql: "DELETE FROM room_member WHERE room = ?", arguments: [room])
            try db.execute(sql: "DELETE FROM room WHERE id = ?", arguments: [room])
        }
    }

    // MARK: - Room messages, outgoing

    /// One room message this node writes (`enqueueRoomMessages`).
    public struct NewRoomMessage: Sendable {
        public var id: MessageID
        public var room: RoomID
        public var body: String
        public var createdAt: Int64
        /// Each member to deliver to (`room_delivery.member`, kept as hex).
        public var members: [IdentityPublicKey]
        public var replyTo: MessageID?
        public var signed: SignedRoomMessageRow?

        public init(
            id: MessageID, room: RoomID, body: String, createdAt: Int64, members: [IdentityPublicKey],
            replyTo: MessageID? = nil, signed: SignedRoomMessageRow? = nil
        ) {
            self.id = id
            self.room = room
            self.body = body
            self.createdAt = createdAt
            self.members = members
            self.replyTo = replyTo
            self.signed = signed
        }
    }

    /// Queues a message to a room: one `message` row (recipient = the room) and one
    /// delivery per member in `members` (this node excluded by the caller). With no other
    /// member, the message is delivered at once. One transaction; the sequence number comes
    /// from the same counter as direct messages. `signed`, the message as its author (this
    /// node) signed it for room sync, is kept in the same transaction: one commit per
    /// message sent, not two.
    public func enqueueRoomMessage(
        id: MessageID, room: RoomID, body: String, createdAt: Int64, sender: IdentityPublicKey,
        members: [IdentityPublicKey], replyTo: MessageID? = nil, signed: SignedRoomMessageRow? = nil
    ) throws(StoreError) -> StoredMessage {
        try enqueueRoomMessages(
            [
                NewRoomMessage(
                    id: id, room: room, body: body, createdAt: createdAt, members: members, replyTo: replyTo,
                    signed: signed)
            ], sender: sender)[0]
    }

    /// The same for a run of messages (pipelined sends) in one transaction: all or none (a
    /// failure stores nothing and consumes no sequence number).
    public func enqueueRoomMessages(_ messages: [NewRoomMessage], sender: IdentityPublicKey) throws(StoreError)
        -> [StoredMessage]
    {
        for m in messages {
            if let signed = m.signed {
                try Self.validateSignedRow(signed)
                guard signed.id == m.id, signed.room == m.room, signed.author == sender else {
                    throw .invalidArgument("the signed form is of another message")
                }
            }
        }
        guard !messages.isEmpty else { return [] }
        return try write { db in
            let sequences = try self.reserveSequenceNumbers(db, count: messages.count)
            var out: [StoredMessage] = []
            out.reserveCapacity(messages.count)
            for (m, sequence) in zip(messages, sequences) {
                out.append(try self.insertRoomMessage(db, m, sender: sender, sequence: sequence))
            }
            if out.contains(where: { $0.state == .queued }) { roomOutboxesKnownEmpty = false }
            return out
        }
    }

    private func insertRoomMessage(
        _ db: Database, _ m: NewRoomMessage, sender: IdentityPublicKey, sequence: Int64
    ) throws
        -> StoredMessage
    {
        let recipients = Array(Set(m.members.map(\.hex))).sorted()
        let state: MessageState = recipients.isEmpty ? .delivered : .queued
        let deliveredAt: Int64? = recipients.isEmpty ? m.createdAt : nil
        do {
            // The room is the recipient of its outgoing messages (one row for all members).
            let room = try Self.ensureParty(db, key: m.room.bytes)
            let replyTo: Data? = m.replyTo.map { Data($0.bytes) }
            try db.execute(
                sql: """
                    INSERT INTO message (id, sender, recipient, peer, incoming, state, sequence, created_at,
                                         delivered_at, room, reply_to)
                    VALUES (?1, ?2, ?3, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9)
                    """,
                arguments: [
                    Data(m.id.bytes), try Self.ensureParty(db, key: sender.bytes), room, state.code, sequence,
                    m.createdAt,
                    deliveredAt, room, replyTo
                ])
        } catch let error as DatabaseError where error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE {
            throw StoreError.conflict("message id \(m.id.hex) from \(sender.hex) is already stored")
        }
        let row = db.lastInsertedRowID
        try Self.insertBody(db, row: row, body: m.body)
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO room_delivery (message_row, member, state) VALUES (?, ?, 'queued')
                """)
        for r in recipients { try insert.execute(arguments: [row, r]) }
        if let signed = m.signed, try Self.insertSignedRow(db, signed, at: m.createdAt) != .inserted {
            throw StoreError.conflict("room sequence \(signed.sequence) of \(sender.hex) is already used")
        }
        try adjustCounter(db, state == .queued ? .queued : .delivered, by: 1)
        return StoredMessage(
            rowID: row, id: m.id, direction: .outgoing, sender: sender, recipient: .room(m.room),
            sequence: sequence, createdAt: m.createdAt, body: m.body, state: state,
            deliveredAt: deliveredAt, room: m.room, replyTo: m.replyTo)
    }

    /// Room messages not yet acknowledged by `member`, oldest sequence first, at most `limit`.
    /// False once `checkRoomOutboxesEmpty` found nothing queued in either room outbox and
    /// nothing was queued since: the node's pump then skips both per-peer queries. Only
    /// the two inserts above queue room traffic, and both clear it.
    public var roomOutboxesMayHaveWork: Bool {
        lock.lock()
        defer { lock.unlock() }
        return !roomOutboxesKnownEmpty
    }

    /// Looks whether anything is queued in the room outboxes (two index probes).
    public func checkRoomOutboxesEmpty() throws(StoreError) {
        try read { db in
            let empty =
                try Bool.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT NOT EXISTS (SELECT 1 FROM room_delivery WHERE state = 'queued')
                               AND NOT EXISTS (SELECT 1 FROM room_operation_outbox)
                            """)) ?? false
            // Set while `read` holds the lock, so no insert can come in between.
            if empty { roomOutboxesKnownEmpty = true }
        }
    }

    /// `messageColumns` for the `m` alias; computed once, it is on every pump.
    static let joinedMessageColumns = messageColumns(of: "m")

    /// A message queued for a member that is only invited (written before anyone else had
    /// joined: it waits for the invited) is held back until the room's cached state says the
    /// member joined: a node that has not joined drops room messages (and acknowledges them).
    public func pendingRoomMessages(to member: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredMessage] {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.joinedMessageColumns) FROM room_delivery d JOIN message m ON m.row_id = d.message_row
                    WHERE d.member = ? AND d.state = 'queued'
                      AND NOT EXISTS (SELECT 1 FROM room_member r
                                      WHERE r.room = (SELECT lower(hex(key)) FROM party WHERE party.id = m.room)
                                        AND r.identity = d.member AND r.joined = 0)
                    ORDER BY m.sequence LIMIT ?
                    """)
            // Damaged rows stepped over, as `pendingOutgoing` does.
            return try self.fetchMessages(
                statement, [member.hex, limit + Self.unreadableRowsSteppedOverPerRead], keep: limit)
        }
    }

    /// `member` acknowledged these room messages. Returns the messages that are now
    /// delivered to every member (their row turns `delivered`); ids that name no queued
    /// delivery to `member` change nothing.
    public func markRoomDeliveries(ids: [MessageID], by member: IdentityPublicKey, at: Int64) throws(StoreError)
        -> [StoredMessage]
    {
        guard !ids.isEmpty else { return [] }
        return try write { db in try self.markRoomDeliveryChange(db, ids: ids, by: member, at: at).delivered }
    }

    /// Marks `ids` held by `member` (its acknowledgement, or its summary: `Store+RoomHolders`).
    func markRoomDeliveryChange(_ db: Database, ids: [MessageID], by member: IdentityPublicKey, at: Int64)
        throws -> RoomDeliveryChange
    {
        let member = member.hex
        let deliver = try db.cachedStatement(
            sql: """
                UPDATE room_delivery SET state = 'delivered', delivered_at = ?
                WHERE member = ? AND state = 'queued'
                  AND message_row IN (SELECT row_id FROM message WHERE id = ? AND incoming = 0 AND room IS NOT NULL)
                RETURNING message_row
                """)
        let remaining = try db.cachedStatement(
            sql: """
                SELECT COUNT(*) FROM room_delivery WHERE message_row = ? AND state = 'queued'
                """)
        let finish = try db.cachedStatement(
            sql: """
                UPDATE message SET state = 1, delivered_at = ? WHERE row_id = ? AND state = 0
                RETURNING \(Self.messageColumns)
                """)
        let one = try db.cachedStatement(sql: "SELECT \(Self.messageColumns) FROM message WHERE row_id = ?")
        var change = RoomDeliveryChange()
        for id in ids {
            for row in try Int64.fetchAll(deliver, arguments: [at, member, Self.idBlob(id)]) {
                guard try Int.fetchOne(remaining, arguments: [row]) == 0 else {
                    change.held += try self.fetchMessages(one, [row])
                    continue
                }
                change.delivered += try self.fetchMessages(finish, [at, row])
            }
        }
        try self.adjustCounter(db, .queued, by: -change.delivered.count)
        try self.adjustCounter(db, .delivered, by: change.delivered.count)
        return change
    }

    /// Outgoing messages to a room that some member has not acknowledged yet.
    public func queuedRoomMessageCount(room: RoomID) throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM message
                    WHERE recipient = \(Self.partyOfKeyParameter) AND room = recipient AND state = 0
                    """,
                arguments: [Self.keyBlob(room)]) ?? 0
        }
    }

    // MARK: - Room messages, incoming

    /// Stores messages received for `room`, de-duplicated by (sender, id) like direct
    /// messages: a message already stored comes back with `isNew` false. One transaction.
    public func storeIncomingRoomMessages(_ messages: [IncomingMessage], room: RoomID, at: Int64)
        throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    {
        guard !messages.isEmpty else { return [] }
        return try write { db in
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO message (id, sender, recipient, peer, incoming, state, sequence, created_at,
                                         received_at, room, reply_to)
                    VALUES (?1, ?2, ?3, ?2, 1, 2, ?4, ?5, ?6, ?7, ?8)
                    ON CONFLICT (id, sender) DO NOTHING
                    """)
            let existing = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message WHERE id = ? AND sender = ?
                    """)
            var results: [(message: StoredMessage, isNew: Bool)] = []
            var newCount = 0
            let roomParty = try Self.ensureParty(db, key: room.bytes)
            for m in messages {
                let sender = try Self.ensureParty(db, key: m.sender.bytes)
                try insert.execute(arguments: [
                    Data(m.id.bytes), sender, try Self.ensureParty(db, key: m.recipient.bytes), m.sequence,
                    m.createdAt, at, roomParty, m.replyTo.map { Data($0.bytes) }
                ])
                if db.changesCount == 1 {
                    newCount += 1
                    let row = db.lastInsertedRowID
                    try Self.insertBody(db, row: row, body: m.body)
                    results.append(
                        (
                            StoredMessage(
                                rowID: row, id: m.id, direction: .incoming, sender: m.sender,
                                recipient: .peer(m.recipient), sequence: m.sequence, createdAt: m.createdAt,
                                body: m.body,
                                state: .received, receivedAt: at, room: room, replyTo: m.replyTo), true
                        ))
                } else {
                    let held = try self.fetchMessageRows(existing, [Data(m.id.bytes), sender])
                    if let stored = held.records.first {
                        results.append((stored, false))
                    } else if let damaged = held.unreadable.first {
                        // Stored before, damaged since: a duplicate all the same (as for direct ones).
                        results.append(
                            (
                                StoredMessage(
                                    rowID: damaged.rowID, id: m.id, direction: .incoming, sender: m.sender,
                                    recipient: .peer(m.recipient), sequence: m.sequence, createdAt: m.createdAt,
                                    body: m.body, state: .received, receivedAt: at, room: room, replyTo: m.replyTo),
                                false
                            ))
                    } else {
                        throw UnexpectedStoredValue(column: "message.id", value: m.id.hex)
                    }
                }
            }
            try self.adjustCounter(db, .received, by: newCount)
            return results
        }
    }

    /// A room's history in local order, paged like `messages(peer:after:before:limit:)`.
    public func roomMessages(room: RoomID, after cursor: Int64?, before: Int64? = nil, limit: Int)
        throws(StoreError) -> [StoredMessage]
    {
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return [] }
        return try read { db in
            let range = "row_id > ? AND row_id < ? AND room = \(Self.partyOfKeyParameter)"
            let sql =
                before == nil
                ? "SELECT \(Self.messageColumns) FROM message WHERE \(range) ORDER BY row_id LIMIT ?"
                : """
                SELECT * FROM (SELECT \(Self.messageColumns) FROM message WHERE \(range)
                ORDER BY row_id DESC LIMIT ?) ORDER BY row_id
                """
            let statement = try db.cachedStatement(sql: sql)
            return try self.fetchMessages(
                statement, [cursor ?? Int64.min, before ?? Int64.max, Self.keyBlob(room), limit])
        }
    }

    /// `author`'s incoming messages in `room` with a sequence above `sequence`, in log
    /// order, at most `limit`: the few a removal cap could mark (`RoomCappedRemovals`;
    /// docs/PROTOCOL.md "Removal caps"), judged again when the room's capped removes change.
    public func incomingRoomMessages(room: RoomID, from author: IdentityPublicKey, above sequence: Int64, limit: Int)
        throws(StoreError) -> [StoredMessage]
    {
        guard limit > 0 else { return [] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message
                    WHERE room = \(Self.partyOfKeyParameter) AND sender = \(Self.partyOfKeyParameter)
                      AND incoming = 1 AND sequence > ? ORDER BY row_id LIMIT ?
                    """)
            return try self.fetchMessages(statement, [Self.keyBlob(room), Self.keyBlob(author), sequence, limit])
        }
    }

    // MARK: - Read state

    /// Unread incoming messages in a room.
    public func roomUnreadCount(room: RoomID) throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM message
                    WHERE room = \(Self.partyOfKeyParameter) AND incoming = 1 AND read_at IS NULL
                    """, arguments: [Self.keyBlob(room)]) ?? 0
        }
    }

    /// Marks the room's unread incoming messages with `rowID <= upTo` (all if nil) read at
    /// `at`; returns their ids in log order. Room messages owe no read receipts: telling
    /// every author who read what is not worth a record per member and message.
    public func markRoomRead(room: RoomID, upTo: Int64?, at: Int64) throws(StoreError) -> [MessageID] {
        try write { db in
            let update = try db.cachedStatement(
                sql: """
                    UPDATE message SET read_at = ?
                    WHERE room = \(Self.partyOfKeyParameter) AND incoming = 1 AND read_at IS NULL AND row_id <= ?
                    RETURNING row_id, id
                    """)
            return try self.markedRead(update, [at, Self.keyBlob(room), upTo ?? Int64.max])
        }
    }

    // MARK: - Helpers

    static func fetchOperations(_ statement: Statement, _ arguments: StatementArguments) throws -> [StoredRoomOperation]
    {
        var out: [StoredRoomOperation] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            let data = try row.decode(Data.self, atIndex: 3)
            out.append(
                StoredRoomOperation(
                    hash: try row.fixedLengthID(RoomOperationHash.self, 0, column: "room_operation.hash"),
                    room: try row.fixedLengthID(RoomID.self, 1, column: "room_operation.room"),
                    sequence: try row.int64(2),
                    encoded: [UInt8](data)))
        }
        return out
    }

    static func fetchRooms(_ db: Database, where condition: String, _ arguments: StatementArguments) throws
        -> [RoomRecord]
    {
        let statement = try db.cachedStatement(
            sql: """
                SELECT id, root, name, creator, created_at, version, status, updated_at, inviter, only_admins_add FROM room
                WHERE \(condition) ORDER BY name, id
                """)
        let members = try db.cachedStatement(
            sql: "SELECT identity, role, joined FROM room_member WHERE room = ? ORDER BY identity")
        var out: [RoomRecord] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            let id = try row.fixedLengthID(RoomID.self, 0, column: "room.id")
            let statusText = try row.text(6)
            guard let status = RoomStatus(rawValue: statusText) else {
                throw UnexpectedStoredValue(column: "room.status", value: statusText)
            }
            out.append(
                RoomRecord(
                    id: id, root: try row.fixedLengthID(RoomOperationHash.self, 1, column: "room.root"),
                    name: try row.text(2), creator: try row.identityKey(3, column: "room.creator"),
                    createdAt: try row.int64(4), version: try row.int64(5),
                    members: [], status: status, onlyAdminsAdd: try row.int64(9) != 0,
                    inviter: try row.optionalIdentityKey(8, column: "room.inviter"), updatedAt: try row.int64(7)))
        }
        for i in out.indices {
            var list: [IdentityPublicKey] = []
            var roles: [IdentityPublicKey: RoomRole] = [:]
            var joined: [IdentityPublicKey] = []
            for row in try Row.fetchAll(members, arguments: [out[i].id.hex]) {
                let identity = try row.identityKey(0, column: "room_member.identity")
                list.append(identity)
                roles[identity] = RoomRole(rawValue: UInt8(clamping: try row.int64(1))) ?? .member
                if try row.int64(2) != 0 { joined.append(identity) }
            }
            out[i].members = list
            out[i].roles = roles
            out[i].joined = joined
        }
        return out
    }
}
