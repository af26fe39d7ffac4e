import GRDB

extension Schema {
    /// The migration that adds replies, edits, delete-for-everyone and reactions (issue 17).
    /// Registered after "message-bodies-v1"; never edited once released.
    ///
    /// - `message.reply_to`: the id of the message a reply quotes (same conversation).
    /// - `message.edited_at` / `deleted_at`: local Unix ms of the latest edit / the delete;
    ///   `change_sequence`: the author's sequence of the latest edit applied, so a resent
    ///   older edit cannot overwrite a newer one.
    /// - `message_action`: edits, deletes and reactions, ours (the outbox: `queued` until
    ///   the peer acknowledges, then `delivered`) and the peers' (`received`, kept to
    ///   de-duplicate resends). An edit's text lives in `body` until the target is deleted,
    ///   when it is erased like the message's own body.
    /// - Our actions on a room message are one `message_action` row (`peer` and `room` are
    ///   the room id) with one `action_delivery` row per other member, like room messages'
    ///   `room_delivery`; the row turns `delivered` when the last member acknowledged it.
    /// - `reaction`: the reactions on a message now; `present = 0` rows remember a
    ///   withdrawal's sequence so a resent older "add" cannot bring it back.
    static func registerConversationMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("conversation-v1") { db in
            try db.execute(
                sql: """
                    ALTER TABLE message ADD COLUMN reply_to TEXT;
                    ALTER TABLE message ADD COLUMN edited_at INTEGER;
                    ALTER TABLE message ADD COLUMN deleted_at INTEGER;
                    ALTER TABLE message ADD COLUMN change_sequence INTEGER;

                    CREATE TABLE message_action (
                        row_id        INTEGER PRIMARY KEY,
                        id            TEXT NOT NULL,
                        author        TEXT NOT NULL,
                        peer          TEXT NOT NULL,
                        direction     TEXT NOT NULL CHECK (direction IN ('outgoing', 'incoming')),
                        sequence      INTEGER NOT NULL,
                        created_at    INTEGER NOT NULL,
                        target        TEXT NOT NULL,
                        target_author TEXT NOT NULL,
                        kind          TEXT NOT NULL CHECK (kind IN ('edit', 'delete', 'react', 'unreact')),
                        body          BLOB,
                        state         TEXT NOT NULL CHECK (state IN ('queued', 'delivered', 'received')),
                        room          TEXT,
                        UNIQUE (author, id)
                    ) STRICT;

                    CREATE TABLE action_delivery (
                        action_row INTEGER NOT NULL REFERENCES message_action (row_id),
                        member     TEXT NOT NULL,
                        state      TEXT NOT NULL CHECK (state IN ('queued', 'delivered')),
                        PRIMARY KEY (action_row, member)
                    ) STRICT, WITHOUT ROWID;
                    CREATE INDEX action_delivery_queued ON action_delivery (member, action_row) WHERE state = 'queued';
                    CREATE INDEX message_action_outbox ON message_action (peer, sequence) WHERE state = 'queued';
                    CREATE INDEX message_action_target ON message_action (target_author, target);

                    CREATE TABLE reaction (
                        message_row INTEGER NOT NULL REFERENCES message (row_id),
                        reactor     TEXT NOT NULL,
                        reaction    TEXT NOT NULL,
                        sequence    INTEGER NOT NULL,
                        present     INTEGER NOT NULL CHECK (present IN (0, 1)),
                        PRIMARY KEY (message_row, reactor, reaction)
                    ) STRICT, WITHOUT ROWID;
                    """)
        }
    }
}
