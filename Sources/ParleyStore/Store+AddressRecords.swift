import Foundation
import GRDB
import ParleyCore

/// Signed address records of contacts (docs/PROTOCOL.md "Address gossip"), kept so a node
/// can relay a contact's latest record after its own restart, before that contact is back.
/// The bytes are the record as received (the node verifies the signature again on load).
extension Store {
    /// Largest stored record: one the wire allows.
    public static let maxAddressRecordBytes = WireLimits.maxAddressRecordBytes

    /// Keeps `record` as `identity`'s latest (replacing an older one). One transaction.
    public func saveAddressRecord(_ record: [UInt8], of identity: IdentityPublicKey, issuedAt: Int64) throws(StoreError)
    {
        guard !record.isEmpty, record.count <= Self.maxAddressRecordBytes else {
            throw .invalidArgument("address record must be 1 to \(Self.maxAddressRecordBytes) bytes")
        }
        try relaxedWrite { db in
            try db.execute(
                sql: """
                    INSERT INTO address_record (identity, record, issued_at) VALUES (?, ?, ?)
                    ON CONFLICT (identity) DO UPDATE SET record = excluded.record, issued_at = excluded.issued_at
                    WHERE excluded.issued_at > address_record.issued_at
                    """, arguments: [identity.hex, Data(record), issuedAt])
        }
    }

    /// Whether the local user has written to `peer` (address gossip's test of a contact:
    /// a message *from* someone proves nothing, anyone can send one).
    public func hasSentMessages(to peer: IdentityPublicKey) throws(StoreError) -> Bool {
        try read { db in
            try Bool.fetchOne(
                db,
                sql: """
                    SELECT 1 FROM message WHERE peer = \(Self.partyOfKeyParameter) AND incoming = 0 LIMIT 1
                    """, arguments: [Self.keyBlob(peer)])
                != nil
        }
    }

    /// Every stored record of a peer that is neither blocked nor replaced.
    public func addressRecords() throws(StoreError) -> [[UInt8]] {
        try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT r.record FROM address_record r JOIN peer p ON p.identity = r.identity
                    WHERE p.trust <> 'blocked' AND p.replaced_by IS NULL ORDER BY r.identity
                    """
            ).map { [UInt8](try $0.decode(Data.self, atIndex: 0)) }
        }
    }
}

extension Schema {
    static func registerAddressRecordsMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("addresses-v2") { db in
            try db.execute(
                sql: """
                    -- The newest signed address record (0x21) of each contact; issued_at is the
                    -- record's own date (Unix ms). Gone with the peer.
                    CREATE TABLE address_record (
                        identity  TEXT PRIMARY KEY REFERENCES peer (identity) ON DELETE CASCADE,
                        record    BLOB NOT NULL,
                        issued_at INTEGER NOT NULL
                    ) STRICT, WITHOUT ROWID;
                    """)
        }
    }
}
