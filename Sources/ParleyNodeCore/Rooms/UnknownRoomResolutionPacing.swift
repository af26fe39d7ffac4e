import ParleyCore

/// When the log of a room this node holds nothing of, as one peer sent it (held in
/// `WaitingRoomOperations`), is resolved to see whether it invites this node
/// (docs/PROTOCOL.md, "What a node keeps"). Pure: `now` is passed in; the room driver
/// resolves when told and reports it.
///
/// Why: resolving the whole log after every operation once one of them names this node
/// made a stranger's log (a create, an unauthorised add of this node, then 4,095 renames)
/// cost work growing with the cube of its size (round 16 review: 0.17 s per resolution of
/// 1,000 operations in a debug build, for each of thousands of operations). Now, per
/// (sender, room), an arriving operation triggers a resolution only the first time the
/// log names this node and when the log has grown `growthFactor` times since the last
/// resolution; the resolutions' sizes then sum to less than twice the largest, so their
/// work is at most a constant times one resolution of the log. What arrives in between is
/// resolved once the sender has been quiet on that room for `quietInterval` (the driver
/// asks `due` on its tick), at most once per `flushSpacing`: an honest log whose first
/// resolution came too early (its invitation before a parent) is taken within a tick or
/// two of its last operation, and a sender that drips operations gets one resolution per
/// `flushSpacing` at most.
public struct UnknownRoomResolutionPacing: Sendable {
    /// An arriving operation is resolved with its log once the log has this many times the
    /// operations it had at the last resolution (2: the sizes double, so
    /// log2(`RoomAdmission.maxWaitingPerSender`) + 1 = 13 resolutions at most for a log sent
    /// in one go).
    public static let growthFactor = 2
    /// A log that grew since its last resolution is resolved again once its sender sent
    /// nothing more of it for this long (the end of its batch).
    public static let quietInterval: Duration = .seconds(2)
    /// ... and at most this often per (sender, room): a sender dripping one operation per
    /// quiet interval costs one resolution per 30 s, not one per operation.
    public static let flushSpacing: Duration = .seconds(30)

    public struct Key: Hashable, Sendable {
        public let peer: IdentityPublicKey
        public let room: RoomID
        public init(peer: IdentityPublicKey, room: RoomID) {
            self.peer = peer
            self.room = room
        }
    }

    private struct Record: Sendable {
        /// Operations in the log when it was last resolved (0: not yet).
        var resolvedSize = 0
        /// Operations in the log when the latest one arrived.
        var offeredSize = 0
        var lastArrival: MonotonicInstant
        var lastFlush: MonotonicInstant?
    }

    private var records: [Key: Record] = [:]
    /// Resolutions asked for so far (arrivals and flushes): what tests and the review count.
    public private(set) var resolutions = 0

    public init() {}

    /// An operation of the unknown room arrived; the log from that sender is now `size`
    /// operations, and `namesMe` says whether it names this node (and has its create).
    /// True: resolve the log now (the caller then reports `resolved`).
    public mutating func arrived(_ key: Key, size: Int, namesMe: Bool, now: MonotonicInstant) -> Bool {
        guard namesMe || records[key] != nil else { return false }
        var record = records[key] ?? Record(lastArrival: now)
        record.offeredSize = size
        record.lastArrival = now
        records[key] = record
        guard namesMe else { return false }
        return record.resolvedSize == 0 || size >= Self.growthFactor * record.resolvedSize
    }

    /// The log of `key` was resolved at `size` operations (and did not invite this node).
    public mutating func resolved(_ key: Key, size: Int) {
        resolutions += 1
        records[key, default: Record(lastArrival: .zero)].resolvedSize = size
    }

    /// The logs to resolve on the tick: resolved before (so they name this node), grown
    /// since, quiet for `quietInterval`, and not flushed within `flushSpacing`. Each is
    /// marked flushed; the caller resolves it and reports `resolved`.
    public mutating func due(now: MonotonicInstant) -> [Key] {
        var keys: [Key] = []
        for (key, record) in records
        where record.resolvedSize > 0 && record.offeredSize > record.resolvedSize
            && now - record.lastArrival >= Self.quietInterval
            && record.lastFlush.map({ now - $0 >= Self.flushSpacing }) ?? true
        {
            records[key]?.lastFlush = now
            keys.append(key)
        }
        return keys
    }

    /// The log of `key` was taken (an invitation), refused or dropped: nothing to pace.
    public mutating func forget(_ key: Key) { records[key] = nil }

    /// Logs being paced (for tests, and for the driver to drop those whose operations
    /// expired).
    public var keys: [Key] { Array(records.keys) }
}
