import ParleyCore

/// Who a new room message goes to first (issue 30, "Rooms as big as an office";
/// docs/PROTOCOL.md "Room sync", "Fan-out"). With room sync, any member that holds a signed
/// message passes it on, so neither the author nor any member has to reach everyone: the
/// author queues it for a bounded number of members, each member that stores it tells and
/// pushes it to a bounded number of others, and the summaries members compare at every
/// session start (and every `RoomSyncLimits.antiEntropyInterval`) fill whatever gap is
/// left. What one message costs one member then does not grow with the room.
///
/// Pure and deterministic for a given random generator (tests pass a seeded one): the
/// candidates are put in key order before they are shuffled.
public enum RoomFanOut {
    /// Members that sync rooms an author queues its new message for itself (durably: kept
    /// and resent until each acknowledges it, like any message). Eight, online ones first:
    /// within a round trip several members hold it, so it survives the author's laptop
    /// closing, and the sender's cost per message is the same in a room of 10 or 1,000.
    public static let directRecipients = 8
    /// Sessions of the room a member tells of a message it just stored (its `roomHave`) and
    /// pushes it to after `RoomSyncLimits.forwardDelay` if they still lack it. With four,
    /// the holders grow about fivefold per round, so a message reaches 1,000 online members
    /// in four or five rounds, and each member receives it about four times, whatever the
    /// room's size (measured by `RoomScaleTests` and parley-bench row 14).
    public static let relayPeers = 4

    /// The members the author queues its new message for: every other joined member that is
    /// not known to sync rooms (it can get the message from no one but its author: the old
    /// behaviour, `roomChat`), and at most `directRecipients` of those that sync, online
    /// ones first. `syncing`: members seen with feature bit 3; a member never seen is not
    /// in it, so it gets the message as before.
    public static func messageRecipients<R: RandomNumberGenerator>(
        joined: [IdentityPublicKey], me: IdentityPublicKey, syncing: Set<IdentityPublicKey>,
        online: Set<IdentityPublicKey>, using rng: inout R
    ) -> [IdentityPublicKey] {
        let others = joined.filter { $0 != me }
        let old = others.filter { !syncing.contains($0) }
        let syncers = others.filter { syncing.contains($0) }
        let chosen = choose(syncers, preferring: online, limit: directRecipients, using: &rng)
        return sorted(old + chosen)
    }

    /// At most `limit` of `candidates`, those in `preferred` first, each group in random
    /// order. The result is in key order.
    public static func choose<R: RandomNumberGenerator>(
        _ candidates: [IdentityPublicKey], preferring preferred: Set<IdentityPublicKey>, limit: Int,
        using rng: inout R
    ) -> [IdentityPublicKey] {
        guard limit > 0 else { return [] }
        let unique = sorted(Array(Set(candidates)))
        guard unique.count > limit else { return unique }
        let first = unique.filter { preferred.contains($0) }.shuffled(using: &rng)
        let then = unique.filter { !preferred.contains($0) }.shuffled(using: &rng)
        return sorted(Array((first + then).prefix(limit)))
    }

    private static func sorted(_ keys: [IdentityPublicKey]) -> [IdentityPublicKey] {
        keys.sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }
}
