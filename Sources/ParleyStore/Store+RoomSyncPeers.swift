import GRDB
import ParleyCore

/// Which room-sync features a peer announced at its latest session, kept across restarts
/// (issue 30): an author queues its new room message (and, with operation summaries, its
/// new room operation) itself for every member *not* known to sync and for only a few
/// that do (`RoomFanOut`), so a node that forgot them at each restart sent to every member
/// it had not met again in this run, the old behaviour. One `setting` row per peer and
/// feature (the feature's prefix and the identity hex): no migration, at most two rows per
/// peer ever seen with the bits (a thousand members are two thousand small rows).
public enum RoomSyncFeature: String, Sendable, CaseIterable {
    /// Features bit 3: signed room messages and their summaries.
    case messages = "room_sync_peer:"
    /// Features bit 5: operation summaries.
    case operations = "room_op_sync_peer:"
    /// Features bit 7: removal caps (a node signs a capped remove only when every other
    /// member of the room is known to read one).
    case removalCaps = "room_cap_peer:"

    /// The first key after every key with this prefix (its last character, ':', plus one).
    var end: String { String(rawValue.dropLast()) + ";" }
}

extension Store {
    /// Records whether `identity` announced `feature` at its latest session.
    public func setRoomSyncPeer(_ identity: IdentityPublicKey, _ feature: RoomSyncFeature = .messages, syncing: Bool)
        throws(StoreError)
    {
        let identity = identity.hex
        try relaxedWrite { db in
            if syncing {
                try db.execute(
                    sql: "INSERT INTO setting (key, value) VALUES (?, '1') ON CONFLICT (key) DO NOTHING",
                    arguments: [feature.rawValue + identity])
            } else {
                try db.execute(sql: "DELETE FROM setting WHERE key = ?", arguments: [feature.rawValue + identity])
            }
        }
    }

    /// Identities last seen with `feature`.
    public func roomSyncPeers(_ feature: RoomSyncFeature = .messages) throws(StoreError) -> [IdentityPublicKey] {
        try read { db in
            try String.fetchAll(
                db, sql: "SELECT substr(key, ?) FROM setting WHERE key >= ? AND key < ? ORDER BY key",
                arguments: [feature.rawValue.count + 1, feature.rawValue, feature.end]
            ).map { hex throws in try StoredKey.identity(hex, column: "setting.key") }
        }
    }
}
