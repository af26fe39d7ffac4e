import Foundation
import GRDB
import ParleyCore

// Key history: each time a person replaced a contact's key (`replacePeer`), an accepted
// `key_change` row records it. Rows from before `trust-v2` (when a new identity under a
// known name was held as a pending change) were converted: see Schema+Trust.swift.
extension Store {
    static let keyChangeColumns = """
        id, display_name, old_identity, new_identity, new_card, address, detected_at, status, resolved_at
        """

    /// Replacements of `identity`'s key, or by it, oldest first.
    public func keyChanges(involving identity: IdentityPublicKey) throws(StoreError) -> [KeyChangeRecord] {
        try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.keyChangeColumns) FROM key_change
                    WHERE (old_identity = ? OR new_identity = ?) AND status = 'accepted' ORDER BY id
                    """)
            return try Self.fetchKeyChanges(statement, [identity.hex, identity.hex])
        }
    }

    /// The key change with this id, whatever its status.
    public func keyChange(id: Int64) throws(StoreError) -> KeyChangeRecord? {
        try read { db in try Self.keyChange(db, id: id) }
    }

    // MARK: - Helpers

    static func keyChange(_ db: Database, id: Int64) throws -> KeyChangeRecord? {
        let statement = try db.cachedStatement(sql: "SELECT \(keyChangeColumns) FROM key_change WHERE id = ?")
        return try fetchKeyChanges(statement, [id]).first
    }

    static func fetchKeyChanges(_ statement: Statement, _ arguments: StatementArguments) throws -> [KeyChangeRecord] {
        var records: [KeyChangeRecord] = []
        let rows = try Row.fetchCursor(statement, arguments: arguments)
        while let row = try rows.next() {
            records.append(
                KeyChangeRecord(
                    id: try row.int64(0),
                    displayName: try row.text(1),
                    oldIdentity: try row.identityKey(2, column: "key_change.old_identity"),
                    newIdentity: try row.identityKey(3, column: "key_change.new_identity"),
                    newCard: try row.bytes(4),
                    address: try row.optionalText(5),
                    detectedAt: try row.int64(6),
                    status: try row.enumeration(KeyChangeStatus.self, 7, column: "key_change.status"),
                    resolvedAt: try row.optionalInt64(8)))
        }
        return records
    }
}
