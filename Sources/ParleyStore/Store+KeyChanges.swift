import Foundation
import GRDB

// Key changes: a known display name presented by a new identity. Held as pending until the
// user accepts (the new identity takes over the old one's conversation and outbox) or
// rejects it. While any change against a peer is pending, that peer's trust is `changed`.
extension Store {
    static let keyChangeColumns = """
        id, display_name, old_identity, new_identity, new_card, address, detected_at, status, resolved_at
        """

    /// Records that `newIdentity` claims the name of known peer `oldIdentity`, and marks the
    /// old peer `changed` (a blocked peer stays blocked). Idempotent for the same pending
    /// (old, new) pair: the existing record is returned, with its card and address
    /// refreshed. `.notFound` if `oldIdentity` is not a known peer.
    public func recordKeyChange(displayName: String, oldIdentity: String, newIdentity: String,
                                newCard: [UInt8], address: String?, at: Int64) throws(StoreError) -> KeyChangeRecord
    {
        try InputValidation.requireNoNUL(displayName, "display name")
        try InputValidation.requireIdentity(oldIdentity, "old identity")
        try InputValidation.requireIdentity(newIdentity, "new identity")
        if let address { try InputValidation.requireNoNUL(address, "address") }
        guard oldIdentity != newIdentity else {
            throw .invalidArgument("a key change needs two different identities")
        }
        return try write { db in
            guard let oldPeer = try Self.peer(db, identity: oldIdentity) else {
                throw StoreError.notFound("peer \(oldIdentity)")
            }
            let refresh = try db.cachedStatement(sql: """
                UPDATE key_change SET new_card = ?, address = COALESCE(?, address)
                WHERE old_identity = ? AND new_identity = ? AND status = 'pending'
                RETURNING \(Self.keyChangeColumns)
                """)
            if let existing = try Self.fetchKeyChanges(refresh, [Data(newCard), address, oldIdentity, newIdentity]).first {
                return existing
            }
            // If the peer is already `changed` because of another pending change, carry that
            // change's record of the trust to restore, not `changed` itself.
            let priorTrust: String
            if oldPeer.trust == .changed {
                let prior = try db.cachedStatement(sql: """
                    SELECT prior_trust FROM key_change WHERE old_identity = ? AND status = 'pending'
                    ORDER BY id LIMIT 1
                    """)
                priorTrust = try String.fetchOne(prior, arguments: [oldIdentity]) ?? TrustState.changed.rawValue
            } else {
                priorTrust = oldPeer.trust.rawValue
            }
            let insert = try db.cachedStatement(sql: """
                INSERT INTO key_change
                    (display_name, old_identity, new_identity, new_card, address, detected_at, status, prior_trust)
                VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)
                RETURNING \(Self.keyChangeColumns)
                """)
            let inserted = try Self.fetchKeyChanges(
                insert, [displayName, oldIdentity, newIdentity, Data(newCard), address, at, priorTrust])
            guard let record = inserted.first else {
                throw UnexpectedStoredValue(column: "key_change", value: "no row returned by insert")
            }
            if oldPeer.trust == .pinned || oldPeer.trust == .verified {
                let mark = try db.cachedStatement(sql: "UPDATE peer SET trust = 'changed' WHERE identity = ?")
                try mark.execute(arguments: [oldIdentity])
            }
            return record
        }
    }

    /// Pending key changes, oldest first.
    public func pendingKeyChanges() throws(StoreError) -> [KeyChangeRecord] {
        try read { db in
            let statement = try db.cachedStatement(sql: """
                SELECT \(Self.keyChangeColumns) FROM key_change WHERE status = 'pending' ORDER BY id
                """)
            return try Self.fetchKeyChanges(statement, [])
        }
    }

    /// The most recent pending key change to `newIdentity`, if any.
    public func pendingKeyChange(newIdentity: String) throws(StoreError) -> KeyChangeRecord? {
        try InputValidation.requireIdentity(newIdentity, "new identity")
        return try read { db in
            let statement = try db.cachedStatement(sql: """
                SELECT \(Self.keyChangeColumns) FROM key_change
                WHERE new_identity = ? AND status = 'pending' ORDER BY id DESC LIMIT 1
                """)
            return try Self.fetchKeyChanges(statement, [newIdentity]).first
        }
    }

    /// The key change with this id, whatever its status.
    public func keyChange(id: Int64) throws(StoreError) -> KeyChangeRecord? {
        try read { db in try Self.keyChange(db, id: id) }
    }

    /// Accepts or rejects a pending key change.
    ///
    /// Rejecting marks it rejected and, if no other change against the old peer is still
    /// pending, gives the old peer back the trust it had before. Accepting this way needs
    /// the new identity already stored as a peer (`.notFound` otherwise); prefer
    /// `acceptKeyChange(id:newPeer:at:)`, which stores it in the same transaction.
    /// Repeating the same decision is a no-op; the opposite decision is `.conflict`.
    public func resolveKeyChange(id: Int64, accept: Bool, at: Int64) throws(StoreError) {
        if accept {
            try acceptKeyChange(id: id, newPeer: nil, at: at)
        } else {
            try write { db in try Self.rejectKeyChange(db, id: id, at: at) }
        }
    }

    /// Accepts a pending key change in ONE transaction: stores `newPeer` (whose identity must
    /// be the change's new identity; nil = already stored), marks the old peer replaced by
    /// it, moves the old peer's undelivered messages to it, and marks the change accepted.
    /// Returns how many queued messages were moved. Accepting again is a no-op returning 0.
    @discardableResult
    public func acceptKeyChange(id: Int64, newPeer: PeerRecord?, at: Int64) throws(StoreError) -> Int {
        if let newPeer { try Self.validate(newPeer) }
        return try write { db in
            guard let change = try Self.keyChange(db, id: id) else {
                throw StoreError.notFound("key change \(id)")
            }
            switch change.status {
            case .accepted: return 0
            case .rejected: throw StoreError.conflict("key change \(id) was already rejected")
            case .pending: break
            }
            if let newPeer {
                guard newPeer.identity == change.newIdentity else {
                    throw StoreError.invalidArgument(
                        "key change \(id) is to \(change.newIdentity), not to \(newPeer.identity)")
                }
                try Self.upsertPeer(db, newPeer)
            } else if try Self.peer(db, identity: change.newIdentity) == nil {
                throw StoreError.notFound("peer \(change.newIdentity): store it before accepting key change \(id)")
            }
            // The new identity is now current, even if an earlier change had replaced it.
            let current = try db.cachedStatement(sql: "UPDATE peer SET replaced_by = NULL WHERE identity = ?")
            try current.execute(arguments: [change.newIdentity])
            let replace = try db.cachedStatement(sql: "UPDATE peer SET replaced_by = ? WHERE identity = ?")
            try replace.execute(arguments: [change.newIdentity, change.oldIdentity])
            let moved = try Self.retarget(db, from: change.oldIdentity, to: change.newIdentity)
            try Self.setStatus(db, id: id, .accepted, at: at)
            return moved
        }
    }

    // MARK: - Helpers

    static func rejectKeyChange(_ db: Database, id: Int64, at: Int64) throws {
        guard let change = try keyChange(db, id: id) else {
            throw StoreError.notFound("key change \(id)")
        }
        switch change.status {
        case .rejected: return
        case .accepted: throw StoreError.conflict("key change \(id) was already accepted")
        case .pending: break
        }
        try setStatus(db, id: id, .rejected, at: at)
        let restore = try db.cachedStatement(sql: """
            UPDATE peer SET trust = (SELECT prior_trust FROM key_change WHERE id = ?)
            WHERE identity = ? AND trust = 'changed' AND NOT EXISTS (
                SELECT 1 FROM key_change WHERE old_identity = ? AND status = 'pending')
            """)
        try restore.execute(arguments: [id, change.oldIdentity, change.oldIdentity])
    }

    static func setStatus(_ db: Database, id: Int64, _ status: KeyChangeStatus, at: Int64) throws {
        let update = try db.cachedStatement(sql: "UPDATE key_change SET status = ?, resolved_at = ? WHERE id = ?")
        try update.execute(arguments: [status.rawValue, at, id])
    }

    static func keyChange(_ db: Database, id: Int64) throws -> KeyChangeRecord? {
        let statement = try db.cachedStatement(sql: "SELECT \(keyChangeColumns) FROM key_change WHERE id = ?")
        return try fetchKeyChanges(statement, [id]).first
    }

    static func fetchKeyChanges(_ statement: Statement, _ arguments: StatementArguments) throws -> [KeyChangeRecord] {
        var records: [KeyChangeRecord] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            records.append(KeyChangeRecord(
                id: try row.int64(0),
                displayName: try row.text(1),
                oldIdentity: try row.text(2),
                newIdentity: try row.text(3),
                newCard: try row.bytes(4),
                address: try row.optionalText(5),
                detectedAt: try row.int64(6),
                status: try row.enumeration(KeyChangeStatus.self, 7, column: "key_change.status"),
                resolvedAt: try row.optionalInt64(8)))
        }
        return records
    }
}
