import GRDB

/// Peers seen with room sync (features bit 3), kept across restarts (issue 30): an author
/// queues its new room message itself for every member *not* known to sync and for only a
/// few that do (`RoomFanOut`), so a node that forgot them at each restart sent to every
/// member it had not met again in this run, the old behaviour. One `setting` row per peer
/// (`room_sync_peer:` and its identity hex): no migration, at most one row per peer ever
/// seen with the bit (a thousand members are a thousand small rows).
extension Store {
    static let roomSyncPeerPrefix = "room_sync_peer:"

    /// Records whether `identity` (hex) announced room sync at its latest session.
    public func setRoomSyncPeer(_ identity: String, syncing: Bool) throws(StoreError) {
        try InputValidation.requireIdentity(identity, "identity")
        try relaxedWrite { db in
            if syncing {
                try db.execute(
                    sql: "INSERT INTO setting (key, value) VALUES (?, '1') ON CONFLICT (key) DO NOTHING",
                    arguments: [Self.roomSyncPeerPrefix + identity])
            } else {
                try db.execute(
                    sql: "DELETE FROM setting WHERE key = ?", arguments: [Self.roomSyncPeerPrefix + identity])
            }
        }
    }

    /// Identities (hex) last seen with room sync.
    public func roomSyncPeers() throws(StoreError) -> [String] {
        try read { db in
            try String.fetchAll(
                db, sql: "SELECT substr(key, ?) FROM setting WHERE key >= ? AND key < ? ORDER BY key",
                arguments: [Self.roomSyncPeerPrefix.count + 1, Self.roomSyncPeerPrefix, "room_sync_peer;"])
        }
    }
}
