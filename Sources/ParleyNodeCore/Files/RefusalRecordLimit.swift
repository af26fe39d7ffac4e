import ParleyCore

/// How many refused file offers from one sender are written to the store. An offer the
/// receiver refuses at once (limits, room, flood, quota, disk floor) is kept as a failed
/// incoming transfer so the local user sees what was not taken; the rows are bounded per
/// sender (`FileDriver.maxRefusedOffersKeptPerPeer`), but each is a store write and a
/// `file.failed` event, and a hostile peer could make one per offer record as fast as its
/// session carries them. A token bucket per sender bounds the writes in time too: a
/// burst, then one per `interval`. Offers beyond it are still answered (`fileEnd` failed,
/// so the sender learns the refusal) but not listed, and the driver logs that once per
/// run of dropped refusals.
///
/// Pure: the driver passes `now` in; a test moves a manual clock.
public struct RefusalRecordLimit: Sendable {
    /// Refusals listed at once from one sender: a person dropping a batch of files on a
    /// full disk sees each one named, and more than this at once is no one's real batch.
    public static let defaultBurst = 8
    /// After the burst, one listed refusal per 6 s (10 a minute): faster than a person
    /// offers files, slow enough that a flood costs a store write per 6 s, not per record.
    public static let defaultInterval: Duration = .seconds(6)
    /// Senders remembered; beyond it the least recently seen is forgotten (bounded
    /// memory). Only peers with an established session can offer, and `max_sessions`
    /// (1,000 by default) bounds those, so a forgotten sender's fresh burst is harmless.
    public static let defaultMaxSenders = 4_096

    public enum Decision: Equatable, Sendable {
        /// Store the refusal and tell the local user.
        case record
        /// Answer the sender but keep nothing; the first such since the last `record`
        /// from this sender: the driver logs, once, that refusals are being dropped.
        case dropFirst
        /// Answer the sender but keep nothing; already logged.
        case drop
    }

    public let burst: Int
    public let interval: Duration
    public let maxSenders: Int

    private struct Sender: Sendable {
        var bucket: TokenBucket
        /// Refusals are being dropped (the log line was asked for).
        var dropping: Bool
    }
    private var senders: [IdentityPublicKey: Sender] = [:]
    /// Senders, least recently seen first (for forgetting the oldest).
    private var order: [IdentityPublicKey] = []

    public init(
        burst: Int = Self.defaultBurst, interval: Duration = Self.defaultInterval,
        maxSenders: Int = Self.defaultMaxSenders
    ) {
        precondition(burst >= 1 && interval > .zero && maxSenders >= 1, "a limit that lets nothing through")
        self.burst = burst
        self.interval = interval
        self.maxSenders = maxSenders
    }

    /// A refusal of an offer from `sender` at `now`: is it stored?
    public mutating func refused(from sender: IdentityPublicKey, now: MonotonicInstant) -> Decision {
        var s: Sender
        if let known = senders[sender] {
            s = known
            order.removeAll { $0 == sender }
        } else {
            s = Sender(bucket: TokenBucket(burst: burst, now: now), dropping: false)
        }
        order.append(sender)
        if order.count > maxSenders { senders[order.removeFirst()] = nil }
        defer { senders[sender] = s }
        if s.bucket.take(burst: burst, interval: interval, now: now) == nil {
            s.dropping = false
            return .record
        }
        if s.dropping { return .drop }
        s.dropping = true
        return .dropFirst
    }

    /// Senders remembered now (at most `maxSenders`).
    public var trackedSenders: Int { senders.count }
}
