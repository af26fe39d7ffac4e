import GRDB

extension Schema {
    /// The migration that adds rooms (issue 8). Registered after "v1"; never edited once
    /// released.
    ///
    /// - Room messages live in `message` like direct ones, marked by `room` (the room id),
    ///   so one cursor orders all history. An outgoing room message is ONE row with
    ///   `recipient = peer = room` and one `room_delivery` row per member (the fan-out):
    ///   each member acknowledges separately, and the row turns `delivered` when the last
    ///   member has. An incoming room message is an ordinary incoming row (peer = sender)
    ///   with `room` set; 1:1 history excludes rows with a room.
    /// - `room_operation` keeps every signed membership operation (the room's history,
    ///   needed to resolve the member list and to bring a new member up to date);
    ///   `room_operation_outbox` holds the ones still to be sent to a member, deleted on ack.
    /// - `room` and `room_member` cache the resolved state (the operations are the truth).
    static func registerRoomsMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("rooms-v1") { db in
            try db.execute(
                sql: """
                    ALTER TABLE message ADD COLUMN room TEXT;
                    CREATE INDEX message_room ON message (room) WHERE room IS NOT NULL;

                    CREATE TABLE room (
                        id         TEXT PRIMARY KEY NOT NULL,
                        root       TEXT NOT NULL,
                        name       TEXT NOT NULL,
                        creator    TEXT NOT NULL,
                        created_at INTEGER NOT NULL,
                        version    INTEGER NOT NULL,
                        is_member  INTEGER NOT NULL CHECK (is_member IN (0, 1)),
                        updated_at INTEGER NOT NULL
                    ) STRICT, WITHOUT ROWID;

                    CREATE TABLE room_member (
                        room     TEXT NOT NULL REFERENCES room (id) ON DELETE CASCADE,
                        identity TEXT NOT NULL,
                        PRIMARY KEY (room, identity)
                    ) STRICT, WITHOUT ROWID;

                    -- No foreign key to room: an operation may arrive before its room's create.
                    CREATE TABLE room_operation (
                        hash        TEXT PRIMARY KEY NOT NULL,
                        room        TEXT NOT NULL,
                        sequence    INTEGER NOT NULL,
                        encoded     BLOB NOT NULL,
                        received_at INTEGER NOT NULL
                    ) STRICT, WITHOUT ROWID;
                    CREATE INDEX room_operation_room ON room_operation (room, sequence);

                    -- ack_id: the operation hash's first 32 hex digits, the id its ack carries.
                    CREATE TABLE room_operation_outbox (
                        operation TEXT NOT NULL REFERENCES room_operation (hash),
                        member    TEXT NOT NULL,
                        ack_id    TEXT NOT NULL,
                        queued_at INTEGER NOT NULL,
                        PRIMARY KEY (member, operation)
                    ) STRICT, WITHOUT ROWID;
                    CREATE INDEX room_operation_outbox_ack ON room_operation_outbox (member, ack_id);

                    CREATE TABLE room_delivery (
                        message_row  INTEGER NOT NULL REFERENCES message (row_id),
                        member       TEXT NOT NULL,
                        state        TEXT NOT NULL CHECK (state IN ('queued', 'delivered')),
                        delivered_at INTEGER,
                        PRIMARY KEY (message_row, member)
                    ) STRICT, WITHOUT ROWID;
                    CREATE INDEX room_delivery_queued ON room_delivery (member, message_row) WHERE state = 'queued';
                    """)
        }
    }

    /// Issue 14: roles, invitations, the room id that commits to the create (room
    /// operations version 2; docs/PROTOCOL.md, "Migration of version-1 rooms").
    ///
    /// - `room.status`: `joined` (this node accepted; it sends, receives and forwards),
    ///   `invited` (an invitation its person has not answered: the room's operations are
    ///   kept as the invitation, nothing is forwarded), `left` (left, declined or removed),
    ///   `retired` (a version-1 room: its history stays readable, it takes no new traffic).
    ///   `inviter`: the peer that delivered the invitation (invitations are bounded per peer).
    /// - `room_member.role` and `room_member.joined` cache each member's role and whether it
    ///   accepted.
    /// - Version-1 operations are not valid version-2 operations (other signature domain,
    ///   other room-id rule), so they and their outbox are dropped; the messages stay.
    static func registerRoomsV2Migration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("rooms-v2") { db in
            try db.execute(
                sql: """
                    ALTER TABLE room ADD COLUMN status TEXT NOT NULL DEFAULT 'joined'
                        CHECK (status IN ('joined', 'invited', 'left', 'retired'));
                    ALTER TABLE room ADD COLUMN inviter TEXT;
                    ALTER TABLE room ADD COLUMN only_admins_add INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE room_member ADD COLUMN role INTEGER NOT NULL DEFAULT 1;
                    ALTER TABLE room_member ADD COLUMN joined INTEGER NOT NULL DEFAULT 1;
                    CREATE INDEX room_invitation ON room (inviter) WHERE status = 'invited';
                    DELETE FROM room_operation_outbox;
                    DELETE FROM room_operation;
                    UPDATE room SET status = 'retired', is_member = 0;
                    """)
        }
    }
}
