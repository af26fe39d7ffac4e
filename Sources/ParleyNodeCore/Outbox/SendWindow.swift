import ParleyCore

/// How much a session may have sent and not yet had acknowledged (docs/PROTOCOL.md,
/// "Acknowledgements"). Every value is the daemon's choice, not the protocol's.
public struct SendWindowLimits: Sendable, Equatable {
    /// Items (messages and room operations) in flight per session before the outbox
    /// waits for acks: enough to fill a LAN's bandwidth-delay product many times over.
    public var maxCount: Int
    /// Body bytes in flight per session, so a peer that stops reading holds at most this
    /// much of our memory in socket buffers.
    public var maxBytes: Int
    /// Items unacknowledged this long are sent again on the same session (the receiver
    /// de-duplicates by message id, so a resend is always safe).
    public var ackTimeout: Duration

    public init(maxCount: Int = 2_000, maxBytes: Int = 4 * 1_048_576, ackTimeout: Duration = .seconds(30)) {
        self.maxCount = maxCount
        self.maxBytes = maxBytes
        self.ackTimeout = ackTimeout
    }
}

/// The send window of one session: what is in flight (by count and by bytes), how far the
/// direct outbox has been sent, and the ack-timeout resend. One type serves the three
/// outboxes (direct messages, room operations, room messages), which share one window
/// because they share one session and one ack record.
///
/// Pure: time is passed in. The driver asks `freeSlots` before reading the store, offers
/// each candidate to `admit`, and sends only what was admitted.
public struct SendWindow: Sendable {
    public struct InFlight: Sendable, Equatable {
        public let sentAt: MonotonicInstant
        public let bytes: Int
        public let lane: OutboxLane
    }

    /// What an acknowledgement meant to this window.
    public struct Acknowledgement: Sendable, Equatable {
        /// Acknowledged ids that were room operations or room messages in flight here.
        public var roomItems: [MessageID] = []
        /// Acknowledged ids this window did not have in flight (sent on an earlier
        /// session, or before an ack-timeout reset): the driver records them in every
        /// table, since it cannot tell which one they belong to.
        public var unknown: [MessageID] = []
        /// Acknowledged ids that were edits, deletes or reactions in flight here.
        public var actionItems: [MessageID] = []

        public init(roomItems: [MessageID] = [], unknown: [MessageID] = [], actionItems: [MessageID] = []) {
            self.roomItems = roomItems
            self.unknown = unknown
            self.actionItems = actionItems
        }
    }

    public let limits: SendWindowLimits
    private var inFlight: [MessageID: InFlight] = [:]
    public private(set) var bytesInFlight = 0
    /// The highest direct-outbox sequence sent on this session: the next pump reads only
    /// rows after it. Reset to 0 by the ack-timeout resend.
    public private(set) var directSentThrough: Int64 = 0

    /// Edits, deletes and reactions the peer refused on this session (a `refused` record:
    /// over its receive quota). They stay queued in the store and are not offered again
    /// on this session (docs/PROTOCOL.md "refused"), as the direct cursor does for chats;
    /// without this, the pump would resend each at once and the peer refuse it again, for
    /// as long as the session lasts. Bounded by what this session sent (the action outbox
    /// is bounded per peer, `NodeLimits.maxQueuedActionsPerPeer`).
    public private(set) var refusedActions: Set<MessageID> = []

    public init(limits: SendWindowLimits) { self.limits = limits }

    public var count: Int { inFlight.count }
    public var isEmpty: Bool { inFlight.isEmpty }

    /// How many more items may be admitted now: 0 once either bound is reached. (The byte
    /// bound is checked before each item, so one large item may pass it: the window never
    /// starves a body larger than `maxBytes`.)
    public var freeSlots: Int {
        bytesInFlight < limits.maxBytes ? max(0, limits.maxCount - inFlight.count) : 0
    }

    public func isInFlight(_ id: MessageID) -> Bool { inFlight[id] != nil }

    /// Records an item as sent now. Returns false, recording nothing, when the item is
    /// already in flight or the window is full; the driver sends only admitted items.
    /// `sequence` is the direct outbox's sequence of the item (nil for room lanes).
    public mutating func admit(
        _ id: MessageID, bytes: Int, lane: OutboxLane, sequence: Int64? = nil,
        now: MonotonicInstant
    ) -> Bool {
        guard freeSlots > 0, inFlight[id] == nil else { return false }
        inFlight[id] = InFlight(sentAt: now, bytes: bytes, lane: lane)
        bytesInFlight += bytes
        if let sequence { directSentThrough = max(directSentThrough, sequence) }
        return true
    }

    /// Removes acknowledged items from the window.
    public mutating func acknowledge(_ ids: [MessageID]) -> Acknowledgement {
        var result = Acknowledgement()
        for id in ids {
            guard let item = inFlight.removeValue(forKey: id) else {
                result.unknown.append(id)
                continue
            }
            bytesInFlight -= item.bytes
            switch item.lane {
            case .direct: break
            case .messageAction: result.actionItems.append(id)
            case .roomOperation, .roomChat: result.roomItems.append(id)
            }
        }
        return result
    }

    /// The peer refused these (a `refused` record): they leave the window like
    /// acknowledged ones, and the refused edits, deletes and reactions are remembered so
    /// the action pump does not offer them again on this session (`refusedActions`).
    public mutating func refuse(_ ids: [MessageID]) -> Acknowledgement {
        let result = acknowledge(ids)
        refusedActions.formUnion(result.actionItems)
        return result
    }

    /// The oldest unacknowledged item's send time, if any.
    public var oldestSentAt: MonotonicInstant? { inFlight.values.map(\.sentAt).min() }

    /// The ack-timeout rule: when the oldest item in flight has waited longer than
    /// `ackTimeout`, the window forgets everything in flight and the direct cursor, so
    /// the next pump sends the whole outbox again on this session. Returns true when it
    /// fired. (A peer that stored a message but lost our ack is the common cause; the
    /// receiver de-duplicates by id.)
    public mutating func resetIfAckTimedOut(now: MonotonicInstant) -> Bool {
        guard let oldest = oldestSentAt, now - oldest > limits.ackTimeout else { return false }
        inFlight.removeAll()
        bytesInFlight = 0
        directSentThrough = 0
        return true
    }
}
