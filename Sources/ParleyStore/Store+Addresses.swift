import GRDB
import ParleyCore

/// Where known peers can be dialled: the addresses a session with them was dialled at and
/// the listening ports they announced, on the host their session came from. Read at start
/// so a node redials its peers after a restart without mDNS (`DialPlanner.remember`).
extension Store {
    /// Addresses kept per peer, newest first (as `DialPlanner.maxRememberedAddresses`).
    public static let maxAddressesPerPeer = 4

    /// Remembers that `identity` was reachable at `address` ("host:port") at `at`; the
    /// oldest addresses beyond `maxAddressesPerPeer` are forgotten. One transaction.
    public func rememberAddress(_ address: String, of identity: IdentityPublicKey, at: Int64) throws(StoreError) {
        let identity = identity.hex
        guard !address.isEmpty, address.utf8.count <= 300 else {
            throw .invalidArgument("address must be 1 to 300 bytes")
        }
        try relaxedWrite { db in
            try db.execute(
                sql: """
                    INSERT INTO peer_address (identity, address, learned_at) VALUES (?, ?, ?)
                    ON CONFLICT (identity, address) DO UPDATE SET learned_at = excluded.learned_at
                    """, arguments: [identity, address, at])
            try db.execute(
                sql: """
                    DELETE FROM peer_address WHERE identity = ? AND address NOT IN (
                        SELECT address FROM peer_address WHERE identity = ? ORDER BY learned_at DESC, address LIMIT ?)
                    """, arguments: [identity, identity, Self.maxAddressesPerPeer])
        }
    }

    /// Every remembered address by peer identity, newest first, for peers that are neither
    /// blocked nor replaced by a new key.
    public func rememberedAddresses() throws(StoreError) -> [IdentityPublicKey: [String]] {
        try read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT a.identity, a.address FROM peer_address a JOIN peer p ON p.identity = a.identity
                    WHERE p.trust <> 'blocked' AND p.replaced_by IS NULL
                    ORDER BY a.identity, a.learned_at DESC, a.address
                    """)
            var out: [IdentityPublicKey: [String]] = [:]
            for row in rows {
                out[try row.identityKey(0, column: "peer_address.identity"), default: []].append(try row.text(1))
            }
            return out
        }
    }
}

extension Schema {
    static func registerAddressesMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("peer-addresses-v1") { db in
            try db.execute(
                sql: """
                    -- Where a peer was reached or said it listens; learned_at is Unix ms. Rows of
                    -- a forgotten peer go with it.
                    CREATE TABLE peer_address (
                        identity   TEXT NOT NULL REFERENCES peer (identity) ON DELETE CASCADE,
                        address    TEXT NOT NULL,
                        learned_at INTEGER NOT NULL,
                        PRIMARY KEY (identity, address)
                    ) STRICT, WITHOUT ROWID;
                    INSERT INTO peer_address (identity, address, learned_at)
                        SELECT identity, last_address, last_seen FROM peer WHERE last_address IS NOT NULL;
                    """)
        }
    }
}
