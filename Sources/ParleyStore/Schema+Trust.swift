import Foundation
import GRDB
import ParleyCore

extension Schema {
    /// `trust-v2` (docs/PROTOCOL.md, "Trust"): a peer is its key, names are labels.
    ///
    /// - A new identity that presented a known peer's name used to be held as a pending
    ///   "key change" of that peer, and the peer marked `changed`. Now it is a peer of its
    ///   own: each pending change's new identity becomes a peer **awaiting approval**
    ///   (`pending`: it was suspicious, so a person decides), and the old peer gets back the
    ///   trust it had before (`prior_trust`). The change rows are kept as history, rejected.
    /// - `peer.trust` allows `pending` and no longer `changed`; `peer.nickname` holds the
    ///   person's own name for a peer (it wins over the name the peer gives itself).
    ///
    /// SQLite cannot alter a CHECK constraint, so the table is rebuilt (the documented
    /// 12-step procedure; GRDB runs migrations with foreign keys checked at the end).
    static func registerTrustMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("trust-v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE peer_v2 (
                        identity      TEXT PRIMARY KEY NOT NULL,
                        display_name  TEXT NOT NULL,
                        host_name     TEXT NOT NULL,
                        card          BLOB NOT NULL,
                        card_sequence INTEGER NOT NULL,
                        noise_key     TEXT NOT NULL,
                        trust         TEXT NOT NULL CHECK (trust IN ('pinned', 'verified', 'pending', 'blocked')),
                        first_seen    INTEGER NOT NULL,
                        last_seen     INTEGER NOT NULL,
                        last_address  TEXT,
                        -- Deferred so a replacement can write both peers in either order.
                        replaced_by   TEXT REFERENCES peer (identity) DEFERRABLE INITIALLY DEFERRED,
                        nickname      TEXT,
                        CHECK (replaced_by IS NULL OR replaced_by <> identity)
                    ) STRICT, WITHOUT ROWID;
                    INSERT INTO peer_v2 (identity, display_name, host_name, card, card_sequence, noise_key, trust,
                                         first_seen, last_seen, last_address, replaced_by, nickname)
                    SELECT identity, display_name, host_name, card, card_sequence, noise_key,
                           CASE trust
                               WHEN 'changed' THEN COALESCE(
                                   (SELECT CASE k.prior_trust WHEN 'changed' THEN 'pinned' ELSE k.prior_trust END
                                    FROM key_change k WHERE k.old_identity = peer.identity AND k.status = 'pending'
                                    ORDER BY k.id LIMIT 1), 'pinned')
                               ELSE trust END,
                           first_seen, last_seen, last_address, replaced_by, NULL
                    FROM peer;
                    DROP TABLE peer;
                    ALTER TABLE peer_v2 RENAME TO peer;
                    CREATE INDEX peer_display_name ON peer (display_name);
                    CREATE INDEX peer_last_address ON peer (last_address);
                    """)
            // Each pending change's new identity: a peer awaiting approval.
            let pending = try Row.fetchAll(
                db,
                sql: """
                    SELECT new_identity, new_card, address, detected_at FROM key_change WHERE status = 'pending'
                    ORDER BY id
                    """)
            for row in pending {
                let identity: String = row[0]
                let bytes: Data = row[1]
                // Only verified cards were recorded; one that no longer decodes is dropped
                // (the identity is pinned anew, as pending, when it connects again).
                guard let card = try? Card.decode([UInt8](bytes)), card.identityKey.hex == identity else { continue }
                let at: Int64 = row[3]
                try db.execute(
                    sql: """
                        INSERT OR IGNORE INTO peer (identity, display_name, host_name, card, card_sequence, noise_key,
                                                    trust, first_seen, last_seen, last_address, replaced_by, nickname)
                        VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, NULL, NULL)
                        """,
                    arguments: [
                        identity, card.displayName, card.hostName, bytes,
                        Int64(clamping: card.sequence), card.noiseKey.hex, at, at, row[2] as String?
                    ])
            }
            try db.execute(
                sql: """
                    UPDATE key_change SET status = 'rejected', resolved_at = detected_at WHERE status = 'pending'
                    """)
        }
    }
}
