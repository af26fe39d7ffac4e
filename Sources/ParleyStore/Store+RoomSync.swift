import Foundation
import GRDB
import ParleyCore

/// Signed room messages (issue 30, docs/PROTOCOL.md "Room sync"): each one's encoding as its
/// author signed it, so this node can pass it on to another member, who checks the author's
/// signature itself. The message as shown lives in `message` like any room message; this
/// table only adds the signed form and the author's per-room sequence.
extension Store {
    /// What storing a signed room message did.
    public enum SignedRoomMessageInsert: Equatable, Sendable {
        case inserted
        /// The same (room, author, sequence) with the same bytes: a duplicate.
        case duplicate
        /// The same (room, author, sequence) with *other* bytes: the author signed two
        /// messages with one sequence (equivocation). The first stored is kept.
        case conflict
    }

    /// One signed room message to keep (`insertSignedRoomMessages`).
    public struct SignedRoomMessageRow: Sendable {
        public var room: RoomID
        public var author: IdentityPublicKey
        public var sequence: UInt64
        public var id: MessageID
        public var encoded: [UInt8]

        public init(room: RoomID, author: IdentityPublicKey, sequence: UInt64, id: MessageID, encoded: [UInt8]) {
            self.room = room
            self.author = author
            self.sequence = sequence
            self.id = id
            self.encoded = encoded
        }
    }

    /// Keeps `encoded` (a verified `SignedRoomMessage`) unless its (room, author, sequence)
    /// is held. One transaction.
    public func insertSignedRoomMessage(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64, id: MessageID, encoded: [UInt8], at: Int64
    ) throws(StoreError) -> SignedRoomMessageInsert {
        try insertSignedRoomMessages(
            [SignedRoomMessageRow(room: room, author: author, sequence: sequence, id: id, encoded: encoded)], at: at)[0]
    }

    /// The same for the messages of one read of a session, in order, in one transaction (a
    /// catch-up of thousands must not cost a commit each).
    public func insertSignedRoomMessages(_ rows: [SignedRoomMessageRow], at: Int64) throws(StoreError)
        -> [SignedRoomMessageInsert]
    {
        for r in rows { try Self.validateSignedRow(r) }
        guard !rows.isEmpty else { return [] }
        return try write { db in try rows.map { r in try Self.insertSignedRow(db, r, at: at) } }
    }

    static func validateSignedRow(_ r: SignedRoomMessageRow) throws(StoreError) {
        guard r.sequence >= 1, r.sequence <= UInt64(Int64.max) else {
            throw .invalidArgument("room sequence out of range")
        }
        guard !r.encoded.isEmpty, r.encoded.count <= SignedRoomMessage.maxEncodedLength else {
            throw .invalidArgument("signed room message must be 1 to \(SignedRoomMessage.maxEncodedLength) bytes")
        }
    }

    /// Inside a write: keeps one validated row unless its (room, author, sequence) is held.
    static func insertSignedRow(_ db: Database, _ r: SignedRoomMessageRow, at: Int64) throws -> SignedRoomMessageInsert
    {
        let existing = try db.cachedStatement(
            sql: "SELECT encoded FROM room_signed_message WHERE room = ? AND author = ? AND room_sequence = ?")
        if let held = try Data.fetchOne(existing, arguments: [r.room.hex, r.author.hex, Int64(r.sequence)]) {
            return [UInt8](held) == r.encoded ? .duplicate : .conflict
        }
        let insert = try db.cachedStatement(
            sql: """
                INSERT INTO room_signed_message (room, author, room_sequence, id, encoded, stored_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """)
        try insert.execute(arguments: [r.room.hex, r.author.hex, Int64(r.sequence), r.id.hex, Data(r.encoded), at])
        return .inserted
    }

    /// The next sequence number `author` uses in `room`: one more than the highest held.
    public func nextRoomSequence(room: RoomID, author: IdentityPublicKey) throws(StoreError) -> UInt64 {
        try read { db in
            let highest = try Int64.fetchOne(
                db, sql: "SELECT MAX(room_sequence) FROM room_signed_message WHERE room = ? AND author = ?",
                arguments: [room.hex, author.hex])
            return UInt64(max(0, highest ?? 0)) + 1
        }
    }

    /// The signed encodings of `author`'s messages `sequences` in `room` (those held), in
    /// the order asked.
    public func signedRoomMessages(room: RoomID, author: IdentityPublicKey, sequences: [UInt64]) throws(StoreError)
        -> [[UInt8]]
    {
        let (room, author) = (room.hex, author.hex)
        return try read { db in
            let one = try db.cachedStatement(
                sql: "SELECT encoded FROM room_signed_message WHERE room = ? AND author = ? AND room_sequence = ?")
            var out: [[UInt8]] = []
            for s in sequences where s <= UInt64(Int64.max) {
                if let d = try Data.fetchOne(one, arguments: [room, author, Int64(s)]) { out.append([UInt8](d)) }
            }
            return out
        }
    }

    /// The signed encoding of the message `id` written by `author` (nil for an unsigned one).
    public func signedRoomMessage(id: MessageID, author: IdentityPublicKey) throws(StoreError) -> [UInt8]? {
        try read { db in
            try Data.fetchOne(
                db, sql: "SELECT encoded FROM room_signed_message WHERE id = ? AND author = ?",
                arguments: [id.hex, author.hex]
            ).map { [UInt8]($0) }
        }
    }

    /// Every held (room, author, sequence), for room sync's ranges at start: ascending. A
    /// damaged row is left out (told to `unreadableRows`, named by its room sequence: the
    /// table has no row id): one must not leave sync empty for every room, which would
    /// refuse a member asking for a room's history everything.
    public func signedRoomMessageSequences() throws(StoreError)
        -> [(room: RoomID, author: IdentityPublicKey, sequence: UInt64)]
    {
        try read { db in
            let statement = try db.cachedStatement(
                sql: "SELECT room_sequence, room, author FROM room_signed_message ORDER BY room, author, room_sequence")
            return try self.decodeRows(statement, [], table: "room_signed_message") { row in
                let sequence = try row.int64(0)
                guard sequence >= 1 else {
                    throw UnexpectedStoredValue(column: "room_signed_message.room_sequence", value: "\(sequence)")
                }
                return (
                    room: try row.fixedLengthID(RoomID.self, 1, column: "room_signed_message.room"),
                    author: try row.identityKey(2, column: "room_signed_message.author"),
                    sequence: UInt64(sequence)
                )
            }.records
        }
    }
}

extension Schema {
    /// Issue 30: signed room messages, kept as signed so any member can pass them on.
    static func registerRoomSyncMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("room-sync-v1") { db in
            try db.execute(
                sql: """
                    -- One row per signed room message held: (room, author, room_sequence) is what
                    -- sync compares; encoded is the message exactly as its author signed it.
                    CREATE TABLE room_signed_message (
                        room          TEXT NOT NULL,
                        author        TEXT NOT NULL,
                        room_sequence INTEGER NOT NULL,
                        id            TEXT NOT NULL,
                        encoded       BLOB NOT NULL,
                        stored_at     INTEGER NOT NULL,
                        PRIMARY KEY (room, author, room_sequence)
                    ) STRICT, WITHOUT ROWID;
                    CREATE INDEX room_signed_message_id ON room_signed_message (id, author);
                    """)
        }
    }
}
