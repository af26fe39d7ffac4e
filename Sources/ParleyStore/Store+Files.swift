import Foundation
import GRDB
import ParleyCore

/// File transfers (issue 18, migration `files-v1`): metadata only; the bytes live in files.
extension Store {
    static let fileTransferColumns = """
        row_id, transfer, peer, direction, room, name, size, media_type, caption, thumbnail, chunk_size,
        content_hash, list_hash, chunk_hashes, state, verified, source_path, source_size, source_mtime,
        saved_path, error, created_at, updated_at
        """

    /// Stores a new transfer; returns it with its row id. A transfer already stored under the
    /// same (peer, transfer, direction) is returned unchanged (a repeated offer).
    public func insertTransfer(_ t: FileTransferRecord) throws(StoreError) -> (record: FileTransferRecord, isNew: Bool)
    {
        try InputValidation.requireNoNUL(t.name, "name")
        return try write { db in
            if let existing = try Self.fetchTransfer(db, peer: t.peer, transfer: t.transfer, direction: t.direction) {
                return (existing, false)
            }
            try db.execute(
                sql: """
                    INSERT INTO file_transfer (transfer, peer, direction, room, name, size, media_type, caption,
                        thumbnail, chunk_size, content_hash, list_hash, chunk_hashes, state, verified, source_path,
                        source_size, source_mtime, saved_path, error, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    t.transfer.hex, t.peer.hex, t.direction.rawValue, t.room?.hex, t.name, t.size, t.mediaType,
                    t.caption,
                    t.thumbnail.isEmpty ? nil : Data(t.thumbnail), t.chunkSize, Data(t.contentHash),
                    Data(t.listHash), t.chunkHashes.map { Data($0) }, t.state.rawValue, t.verified, t.sourcePath,
                    t.sourceSize, t.sourceMtime, t.savedPath, t.error, t.createdAt, t.updatedAt
                ])
            var stored = t
            stored.rowID = db.lastInsertedRowID
            return (stored, true)
        }
    }

    public func transfer(
        peer: IdentityPublicKey, transfer: TransferID, direction: FileTransferRecord.Direction
    ) throws(StoreError) -> FileTransferRecord? {
        try read { db in try Self.fetchTransfer(db, peer: peer, transfer: transfer, direction: direction) }
    }

    public func transfer(rowID: Int64) throws(StoreError) -> FileTransferRecord? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.fileTransferColumns) FROM file_transfer WHERE row_id = ?", arguments: [rowID]
            ).map(Self.decodeTransfer)
        }
    }

    /// Transfers whose id starts with `prefix` (lowercase hex), newest first, at most `limit`.
    public func transfers(idPrefix prefix: String, limit: Int) throws(StoreError) -> [FileTransferRecord] {
        try read { db in
            try self.fetchTransfers(
                db,
                """
                SELECT \(Self.fileTransferColumns) FROM file_transfer WHERE substr(transfer, 1, ?) = ?
                ORDER BY row_id DESC LIMIT ?
                """, [prefix.utf8.count, prefix, limit])
        }
    }

    /// The newest transfers, at most `limit`.
    public func recentTransfers(limit: Int) throws(StoreError) -> [FileTransferRecord] {
        try read { db in
            try self.fetchTransfers(
                db, "SELECT \(Self.fileTransferColumns) FROM file_transfer ORDER BY row_id DESC LIMIT ?", [limit])
        }
    }

    /// Unfinished transfers with `peer` (offered or transferring), oldest first.
    public func unfinishedTransfers(with peer: IdentityPublicKey) throws(StoreError) -> [FileTransferRecord] {
        try read { db in
            try self.fetchTransfers(
                db,
                """
                SELECT \(Self.fileTransferColumns) FROM file_transfer
                WHERE peer = ? AND state IN ('offered', 'transferring') ORDER BY row_id
                """, [peer.hex])
        }
    }

    /// Incoming offers waiting for the local user's answer, from everyone
    /// (`FileOfferRefusal.maxWaitingOffersForStrangers`).
    public func waitingIncomingOfferCount() throws(StoreError) -> Int {
        try read { db in
            try Int.fetchOne(
                db, sql: "SELECT count(*) FROM file_transfer WHERE direction = 'in' AND state = 'offered'") ?? 0
        }
    }

    /// The source paths of every unfinished outgoing transfer: the daemon's copies still
    /// needed (the others are removed at start, `OutgoingCopies.sweep`).
    public func unfinishedOutgoingSourcePaths() throws(StoreError) -> Set<String> {
        try read { db in
            Set(
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT source_path FROM file_transfer
                        WHERE direction = 'out' AND state IN ('offered', 'transferring') AND source_path IS NOT NULL
                        """))
        }
    }

    /// Deletes all but the newest `keep` incoming transfers from `peer` that failed before
    /// any chunk was taken (offers refused at once): a peer offering again and again cannot
    /// grow the table. Returns how many were deleted.
    @discardableResult
    public func pruneRefusedOffers(from peer: IdentityPublicKey, keep: Int) throws(StoreError) -> Int {
        try write { db in
            try db.execute(
                sql: """
                    DELETE FROM file_transfer WHERE row_id IN (
                        SELECT row_id FROM file_transfer
                        WHERE peer = ? AND direction = 'in' AND state = 'failed' AND verified = 0
                            AND saved_path IS NULL
                        ORDER BY row_id DESC LIMIT -1 OFFSET ?)
                    """, arguments: [peer.hex, max(0, keep)])
            return db.changesCount
        }
    }

    /// Sets a transfer's state (and error text, and where the file was saved).
    public func setTransferState(
        rowID: Int64, _ state: FileTransferRecord.State, error: String? = nil, savedPath: String? = nil, at: Int64
    ) throws(StoreError) {
        try write { db in
            try db.execute(
                sql: """
                    UPDATE file_transfer SET state = ?, error = ?, saved_path = coalesce(?, saved_path),
                        updated_at = ? WHERE row_id = ?
                    """, arguments: [state.rawValue, error, savedPath, at, rowID])
        }
    }

    /// Records the verified count. Without its own fsync: the count lagging behind the disk
    /// after a crash only makes a resume start earlier (the data before it was fsynced first).
    public func setTransferVerified(rowID: Int64, _ verified: Int64, at: Int64) throws(StoreError) {
        try relaxedWrite { db in
            try db.execute(
                sql: "UPDATE file_transfer SET verified = max(verified, ?), updated_at = ? WHERE row_id = ?",
                arguments: [verified, at, rowID])
        }
    }

    /// Keeps the verified chunk hash list of an incoming transfer.
    public func setTransferChunkHashes(rowID: Int64, _ hashes: [UInt8]) throws(StoreError) {
        try write { db in
            try db.execute(
                sql: "UPDATE file_transfer SET chunk_hashes = ? WHERE row_id = ?", arguments: [Data(hashes), rowID])
        }
    }

    /// File bytes taken in from `peer` (nil: from everyone), counted for the receive quota:
    /// completed and accepted incoming transfers.
    public func incomingFileBytes(from peer: IdentityPublicKey?) throws(StoreError) -> Int {
        try read { db in
            let sql = """
                SELECT coalesce(sum(size), 0) FROM file_transfer
                WHERE direction = 'in' AND state IN ('transferring', 'completed')
                """
            if let peer {
                return try Int.fetchOne(db, sql: sql + " AND peer = ?", arguments: [peer.hex]) ?? 0
            }
            return try Int.fetchOne(db, sql: sql) ?? 0
        }
    }

    static func fetchTransfer(
        _ db: Database, peer: IdentityPublicKey, transfer: TransferID, direction: FileTransferRecord.Direction
    ) throws -> FileTransferRecord? {
        try Row.fetchOne(
            db,
            sql: """
                SELECT \(fileTransferColumns) FROM file_transfer WHERE peer = ? AND transfer = ? AND direction = ?
                """, arguments: [peer.hex, transfer.hex, direction.rawValue]
        ).map(decodeTransfer)
    }

    /// The transfers `sql` selects (with `fileTransferColumns`), a damaged row left out
    /// (`decodeRows`): one must not hide the others from `files.list` or keep the rest
    /// from resuming.
    func fetchTransfers(_ db: Database, _ sql: String, _ arguments: StatementArguments) throws
        -> [FileTransferRecord]
    {
        try decodeRows(try db.cachedStatement(sql: sql), arguments, table: "file_transfer", Self.decodeTransfer)
            .records
    }

    static func decodeTransfer(_ row: Row) throws -> FileTransferRecord {
        guard let direction = FileTransferRecord.Direction(rawValue: try row.text(3)) else {
            throw UnexpectedStoredValue(column: "direction", value: try row.text(3))
        }
        guard let state = FileTransferRecord.State(rawValue: try row.text(14)) else {
            throw UnexpectedStoredValue(column: "state", value: try row.text(14))
        }
        func blob(_ i: Int) throws -> [UInt8]? { try row.decode(Data?.self, atIndex: i).map { [UInt8]($0) } }
        return FileTransferRecord(
            rowID: try row.int64(0),
            transfer: try row.fixedLengthID(TransferID.self, 1, column: "file_transfer.transfer"),
            peer: try row.identityKey(2, column: "file_transfer.peer"), direction: direction,
            room: try row.optionalFixedLengthID(RoomID.self, 4, column: "file_transfer.room"), name: try row.text(5),
            size: try row.int64(6), mediaType: try row.text(7),
            caption: try row.text(8), thumbnail: try blob(9) ?? [], chunkSize: try row.int64(10),
            contentHash: try blob(11) ?? [], listHash: try blob(12) ?? [], chunkHashes: try blob(13), state: state,
            verified: try row.int64(15), sourcePath: try row.optionalText(16), sourceSize: try row.optionalInt64(17),
            sourceMtime: try row.optionalInt64(18), savedPath: try row.optionalText(19),
            error: try row.optionalText(20), createdAt: try row.int64(21), updatedAt: try row.int64(22))
    }
}
