/// The limits of address gossip and the dial-back probe, each with its reason.
public enum GossipLimits {
    /// A signed address record older than this (by its `issuedAt`) is refused and no longer
    /// relayed: laptops change networks daily, and an old record is where someone *was*.
    /// Nodes re-sign their own record at every session start, so a node seen within a day
    /// always has a fresh one.
    public static let maxRecordAgeMs: UInt64 = 24 * 3600 * 1000
    /// A record dated further in the future than this is refused: clocks on a LAN disagree
    /// by seconds to minutes, and a far-future record would otherwise outrank every honest
    /// later one for as long as its date.
    public static let maxFutureSkewMs: UInt64 = 10 * 60 * 1000
    /// Address records accepted from one session (after which they are ignored until the
    /// next session): bounds the signature checks and the memory a contact can cost us.
    public static let maxRecordsPerSession = 256
    /// Subjects whose latest record is kept in memory (contacts only, so this is a bound on
    /// an honest contact list, not something a peer can fill).
    public static let maxKeptRecords = 1_024
    /// Records sent to one peer at a session start: the common contacts of two people.
    public static let maxRelayedPerSession = 256
    /// Dial-back probes a node answers per requesting peer: one, then one per minute. A
    /// probe costs one TCP connection to the requester's own host, never to anyone else.
    /// Records about someone not (yet) a contact or co-member, relayed by a contact or
    /// co-member, kept this long and at most this many (the newest per subject) in case the
    /// subject becomes a co-member meanwhile: the relay of a new co-member's record often
    /// arrives just before the room operation that makes it one (the record goes at once,
    /// the operation through the outbox), and is not sent twice on one session. A peer can
    /// fill the list only with records it may relay anyway, and only this far.
    public static let maxEarlyRecords = 64
    public static let earlyRecordLifetimeMs: UInt64 = 10 * 60 * 1000
    public static let dialBackBurst = 1
    public static let dialBackInterval: Duration = .seconds(60)
}
