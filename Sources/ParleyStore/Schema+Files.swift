import GRDB

extension Schema {
    /// `files-v1` (issue 18): file transfers in both directions. Only metadata lives here
    /// (the offer, the chunk hashes, progress, state); file bytes never go into SQLite: the
    /// sender reads its source in place, the receiver writes a partial file in the download
    /// directory (docs/PROTOCOL.md "Files").
    static func registerFilesMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("files-v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE file_transfer (
                        row_id       INTEGER PRIMARY KEY,
                        transfer     TEXT NOT NULL,
                        peer         TEXT NOT NULL,
                        direction    TEXT NOT NULL CHECK (direction IN ('in', 'out')),
                        room         TEXT,
                        name         TEXT NOT NULL,
                        size         INTEGER NOT NULL,
                        media_type   TEXT NOT NULL,
                        caption      TEXT NOT NULL,
                        thumbnail    BLOB,
                        chunk_size   INTEGER NOT NULL,
                        content_hash BLOB NOT NULL,
                        list_hash    BLOB NOT NULL,
                        chunk_hashes BLOB,
                        state        TEXT NOT NULL,
                        verified     INTEGER NOT NULL DEFAULT 0,
                        source_path  TEXT,
                        source_size  INTEGER,
                        source_mtime INTEGER,
                        saved_path   TEXT,
                        error        TEXT,
                        created_at   INTEGER NOT NULL,
                        updated_at   INTEGER NOT NULL,
                        UNIQUE (peer, transfer, direction)
                    ) STRICT;
                    CREATE INDEX file_transfer_peer_state ON file_transfer (peer, state);
                    """)
        }
    }
}
