import GRDB

/// The database schema as an ordered list of migrations. A migration, once released, is
/// never edited: changes go in a new one, so every existing database reaches the same shape.
enum Schema {
    /// Written to the SQLite header (`PRAGMA application_id`) so that a database from some
    /// other program is recognised as such instead of being migrated: ASCII "PRLY".
    static let applicationID: Int32 = 0x5052_4C59

    /// Names of counters: rows of the `counter` table; since `message-counters-one-row-v1`
    /// the five the message path moves are columns of `message_counter` instead
    /// (`CounterLedger.Name`).
    enum Counter {
        /// Last sequence number handed out by this node; 0 means none yet.
        static let lastSequence = "last_sequence"
        // Message totals by state, kept by the same transactions that change states so
        // `counts()` costs three row reads instead of a scan of the whole history.
        static let queued = "messages_queued"
        static let delivered = "messages_delivered"
        static let received = "messages_received"
        /// Id of the last event appended to the journal; 0 means none yet.
        static let lastEventID = "last_event_id"
        /// Every event with an id up to this one has been pruned (0: none).
        static let eventsPrunedThrough = "events_pruned_through"
        /// Every message body with a row id up to this one is in the search index
        /// (`SearchIndexFeed`; since the message-search-batched-v1 migration).
        static let searchIndexedThrough = "search_indexed_through"
    }

    /// Index names that queries refer to.
    enum Index {
        static let messageIDSender = "message_id_sender"
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: "PRAGMA application_id = \(applicationID)")
            try db.execute(
                sql: """
                    CREATE TABLE counter (
                        name  TEXT PRIMARY KEY NOT NULL,
                        value INTEGER NOT NULL
                    ) STRICT, WITHOUT ROWID;
                    INSERT INTO counter (name, value) VALUES
                        ('\(Counter.lastSequence)', 0),
                        ('\(Counter.queued)', 0),
                        ('\(Counter.delivered)', 0),
                        ('\(Counter.received)', 0);

                    -- Outbox and inbox in one table: history is one ordered list per peer.
                    -- row_id is AUTOINCREMENT so a cursor a client holds is never reused.
                    -- peer is the other party (recipient if outgoing, sender if incoming), stored
                    -- so history for one peer is a single index range in row_id order.
                    -- body is BLOB (UTF-8) because GRDB binds TEXT NUL-terminated.
                    CREATE TABLE message (
                        row_id       INTEGER PRIMARY KEY AUTOINCREMENT,
                        id           TEXT NOT NULL,
                        direction    TEXT NOT NULL CHECK (direction IN ('outgoing', 'incoming')),
                        sender       TEXT NOT NULL,
                        recipient    TEXT NOT NULL,
                        peer         TEXT NOT NULL,
                        sequence     INTEGER NOT NULL,
                        created_at   INTEGER NOT NULL,
                        body         BLOB NOT NULL,
                        state        TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'received')),
                        delivered_at INTEGER,
                        received_at  INTEGER,
                        CHECK ((direction = 'outgoing') = (state IN ('queued', 'delivered'))),
                        CHECK (peer = CASE direction WHEN 'outgoing' THEN recipient ELSE sender END)
                    ) STRICT;
                    -- A message is its sender's id. (id, sender) rather than (sender, id): the
                    -- same index also finds a message by id alone (acks, message(id:)). Named so
                    -- queries can insist on it with INDEXED BY.
                    CREATE UNIQUE INDEX \(Index.messageIDSender) ON message (id, sender);
                    -- The outbox: only undelivered messages, so it stays small however long the
                    -- history grows. Serves pendingOutgoing, pendingRecipients and retarget.
                    CREATE INDEX message_queued ON message (recipient, sequence) WHERE state = 'queued';
                    -- History per peer; row_id is implicitly the last key column.
                    CREATE INDEX message_peer ON message (peer);

                    CREATE TABLE peer (
                        identity      TEXT PRIMARY KEY NOT NULL,
                        display_name  TEXT NOT NULL,
                        host_name     TEXT NOT NULL,
                        card          BLOB NOT NULL,
                        card_sequence INTEGER NOT NULL,
                        noise_key     TEXT NOT NULL,
                        trust         TEXT NOT NULL CHECK (trust IN ('pinned', 'verified', 'changed', 'blocked')),
                        first_seen    INTEGER NOT NULL,
                        last_seen     INTEGER NOT NULL,
                        last_address  TEXT,
                        -- Deferred so a key change can write both peers in either order.
                        replaced_by   TEXT REFERENCES peer (identity) DEFERRABLE INITIALLY DEFERRED,
                        CHECK (replaced_by IS NULL OR replaced_by <> identity)
                    ) STRICT, WITHOUT ROWID;
                    CREATE INDEX peer_display_name ON peer (display_name);
                    CREATE INDEX peer_last_address ON peer (last_address);

                    CREATE TABLE key_change (
                        id           INTEGER PRIMARY KEY AUTOINCREMENT,
                        display_name TEXT NOT NULL,
                        old_identity TEXT NOT NULL REFERENCES peer (identity),
                        new_identity TEXT NOT NULL,
                        new_card     BLOB NOT NULL,
                        address      TEXT,
                        detected_at  INTEGER NOT NULL,
                        status       TEXT NOT NULL CHECK (status IN ('pending', 'accepted', 'rejected')),
                        resolved_at  INTEGER,
                        -- The old peer's trust before the change marked it 'changed', restored
                        -- when the last pending change against it is rejected.
                        prior_trust  TEXT NOT NULL CHECK (prior_trust IN ('pinned', 'verified', 'changed', 'blocked')),
                        CHECK (old_identity <> new_identity)
                    ) STRICT;
                    -- At most one pending record per (old, new) pair: re-detection is idempotent.
                    CREATE UNIQUE INDEX key_change_pending_pair ON key_change (old_identity, new_identity)
                        WHERE status = 'pending';
                    CREATE INDEX key_change_pending_new ON key_change (new_identity) WHERE status = 'pending';

                    CREATE TABLE setting (
                        key   TEXT PRIMARY KEY NOT NULL,
                        value TEXT NOT NULL
                    ) STRICT, WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("read-state-and-event-journal") { db in
            try db.execute(
                sql: """
                    -- read_at: incoming, when this node's user read it; outgoing, when the
                    -- peer's read receipt arrived. receipt_pending: an incoming message read
                    -- here whose read receipt has not been handed to a session yet.
                    ALTER TABLE message ADD COLUMN read_at INTEGER;
                    ALTER TABLE message ADD COLUMN receipt_pending INTEGER NOT NULL DEFAULT 0
                        CHECK (receipt_pending IN (0, 1));
                    -- Unread counts per conversation: only unread incoming rows are indexed.
                    CREATE INDEX message_unread ON message (peer) WHERE direction = 'incoming' AND read_at IS NULL;
                    CREATE INDEX message_receipt_pending ON message (peer) WHERE receipt_pending = 1;

                    -- What the control socket notified, so a client can resume after the id
                    -- of the last event it saw. id comes from the last_event_id counter (never
                    -- reused, even after pruning). Message events keep only the message's
                    -- row_id (rendered from the message table on replay, so bodies are not
                    -- stored twice); other events keep their params as JSON.
                    CREATE TABLE event (
                        id          INTEGER PRIMARY KEY,
                        at          INTEGER NOT NULL,
                        method      TEXT NOT NULL,
                        peer        TEXT,
                        message_row INTEGER,
                        params      BLOB,
                        CHECK ((message_row IS NULL) <> (params IS NULL))
                    ) STRICT;
                    CREATE INDEX event_at ON event (at);
                    INSERT INTO counter (name, value) VALUES
                        ('\(Counter.lastEventID)', 0),
                        ('\(Counter.eventsPrunedThrough)', 0);
                    """)
        }
        registerRoomsMigration(&migrator)
        migrator.registerMigration("message-bodies-v1") { db in
            try db.execute(
                sql: """
                    -- Bodies live apart from the message row. SQLite rewrites a whole row, its
                    -- overflow pages included, on every UPDATE whose record changes size, so
                    -- marking a 64 KiB message delivered or read wrote its body to the disk
                    -- again (twice: WAL, then checkpoint). Bodies are written once, never
                    -- updated. row_id is message.row_id.
                    CREATE TABLE message_body (
                        row_id INTEGER PRIMARY KEY,
                        body   BLOB NOT NULL
                    ) STRICT;
                    INSERT INTO message_body (row_id, body) SELECT row_id, body FROM message;
                    ALTER TABLE message DROP COLUMN body;
                    """)
        }
        registerTrustMigration(&migrator)
        registerSearchMigration(&migrator)
        registerAddressesMigration(&migrator)
        registerRoomsV2Migration(&migrator)
        registerQuotaMigration(&migrator)
        registerConversationMigration(&migrator)
        registerFilesMigration(&migrator)
        registerAddressRecordsMigration(&migrator)
        registerSearchBatchMigration(&migrator)
        registerRoomSyncMigration(&migrator)
        registerJournalIndexMigration(&migrator)
        registerMessageChecksMigration(&migrator)
        registerLeanMessagesMigration(&migrator)
        registerMessageCountersMigration(&migrator)
        return migrator
    }
}
