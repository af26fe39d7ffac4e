import GRDB
import ParleyCore

/// Unused identities are not kept forever (issue 15): a key that connected, was pinned on
/// first use (or held for approval), and never exchanged a message is forgotten once it has
/// not been seen for a while. Minting keys costs an attacker nothing; each one would
/// otherwise stay in the peer table for good. Verified and blocked keys, keys with a
/// nickname, and keys in a replacement history are kept.
extension Store {
    /// Forgets every `pinned` or `pending` peer last seen before `lastSeenBefore` (unix ms)
    /// with no message in either direction, no nickname and no part in a key replacement,
    /// except those in `keep` (e.g. online now). Returns the identities forgotten.
    @discardableResult
    public func expireUnusedPeers(lastSeenBefore: Int64, keep: Set<IdentityPublicKey> = []) throws(StoreError)
        -> [IdentityPublicKey]
    {
        try write { db in
            let candidates = try Row.fetchAll(
                db,
                sql: """
                    SELECT identity FROM peer
                    WHERE trust IN ('pinned', 'pending') AND last_seen < ? AND nickname IS NULL AND replaced_by IS NULL
                      AND NOT EXISTS (SELECT 1 FROM peer AS p WHERE p.replaced_by = peer.identity)
                      AND NOT EXISTS (SELECT 1 FROM key_change WHERE old_identity = peer.identity OR new_identity = peer.identity)
                      AND NOT EXISTS (
                          SELECT 1 FROM party JOIN message ON message.peer = party.id
                          WHERE party.key = \(Schema.unhexFunction)(peer.identity))
                    """, arguments: [lastSeenBefore]
            ).map { try $0.identityKey(0, column: "peer.identity") }
            let expired = candidates.filter { !keep.contains($0) }
            let delete = try db.cachedStatement(sql: "DELETE FROM peer WHERE identity = ?")
            for identity in expired { try delete.execute(arguments: [identity.hex]) }
            return expired
        }
    }
}
