/// When `parley notify` shows a desktop notification, and what it says (pure; the time is
/// passed in). A hostile peer can send as fast as the daemon accepts; a notification per
/// message would bury the person's desktop. So:
/// - at most `burst` notifications at once, then one per `refillSeconds` (a token bucket);
/// - what arrives meanwhile is **coalesced**: one summary when the next token is there
///   ("alice (abcd-efgh): 37 new messages", or "Parley: 120 new messages" from several),
///   never a notification per message;
/// - each conversation's notification replaces the previous one of the same conversation
///   (`key`; the performer passes the server's id as `replaces_id`), so even the burst
///   stacks into one bubble per conversation.
struct NotificationPlanner {
    /// A burst covers a short exchange arriving while the person is away for a moment.
    static let burst = 3.0
    /// After that, one notification per this many seconds at most.
    static let refillSeconds = 10.0
    /// Conversations named in a summary; the rest are counted.
    static let maxNamedInSummary = 3
    /// Conversations kept apart while coalescing (memory bound under a flood from many
    /// names); beyond this they count towards the total only.
    static let maxPendingConversations = 64

    struct Incoming: Equatable {
        /// The conversation: one notification each (`peer:FP`, `room:ID`).
        var key: String
        /// Already plain: who, and where (`NotificationText.sender`, a room name).
        var title: String
        /// Plain text (the performer escapes it).
        var body: String
    }

    struct Show: Equatable {
        var key: String
        var title: String
        var body: String
    }

    struct Pending {
        var incoming: Incoming
        var count: Int
    }

    private var tokens: Double
    private var last: Double
    private var pending: [Pending] = []
    private var pendingTotal = 0

    init(now: Double) {
        tokens = Self.burst
        last = now
    }

    /// A message (or file offer) arrived: shown now, or kept for the next summary.
    mutating func receive(_ incoming: Incoming, now: Double) -> Show? {
        refill(now)
        if pending.isEmpty && tokens >= 1 {
            tokens -= 1
            return Show(key: incoming.key, title: incoming.title, body: incoming.body)
        }
        pendingTotal += 1
        if let index = pending.firstIndex(where: { $0.incoming.key == incoming.key }) {
            pending[index].incoming = incoming
            pending[index].count += 1
        } else if pending.count < Self.maxPendingConversations {
            pending.append(Pending(incoming: incoming, count: 1))
        }
        return nil
    }

    /// When `tick` has something to show (nil: nothing is waiting).
    func nextTick() -> Double? {
        guard pendingTotal > 0 else { return nil }
        return last + max(0, 1 - tokens) * Self.refillSeconds
    }

    /// The summary of what waited, once a token is there.
    mutating func tick(now: Double) -> Show? {
        refill(now)
        guard pendingTotal > 0, tokens >= 1 else { return nil }
        tokens -= 1
        defer {
            pending.removeAll()
            pendingTotal = 0
        }
        if pending.count == 1, let only = pending.first, only.count == pendingTotal {
            if only.count == 1 {
                return Show(key: only.incoming.key, title: only.incoming.title, body: only.incoming.body)
            }
            return Show(
                key: only.incoming.key, title: only.incoming.title,
                body: "\(only.count) new messages. The latest: \(only.incoming.body)")
        }
        let named = pending.prefix(Self.maxNamedInSummary)
        var from = named.map(\.incoming.title).joined(separator: ", ")
        if pendingTotal > named.reduce(0, { $0 + $1.count }) { from += " and others" }
        return Show(key: "summary", title: "Parley: \(pendingTotal) new messages", body: "From \(from).")
    }

    private mutating func refill(_ now: Double) {
        guard now > last else { return }
        tokens = min(Self.burst, tokens + (now - last) / Self.refillSeconds)
        last = now
    }
}
