import ParleyCore

/// Every limit of room sync, each with its reason (docs/PROTOCOL.md "Room sync").
public enum RoomSyncLimits {
    /// Messages sync has pushed to one session for one room and that are not acknowledged
    /// yet. Catching up 10,000 messages then takes 40 round trips of acks, not 10,000 records
    /// in the send buffer at once; the session's send window (`SendWindow`) paces the bytes
    /// under this (a message is at most 64 KiB, so at most 16 MiB per room and session even
    /// before the window, which holds far less).
    public static let maxInFlightPerSessionRoom = 256
    /// A summary of one room goes to one session at most this often: a room where people type
    /// fast costs one `roomHave` per 5 seconds per session, whatever the rate of messages.
    public static let haveInterval: Duration = .seconds(5)
    /// A member that just stored a message waits this long before pushing it to a session
    /// whose last summary lacks it: the author usually sends it to that member itself in
    /// the same moment, and the member's next summary then says so (a push is never wrong,
    /// only redundant: the receiver de-duplicates).
    public static let forwardDelay: Duration = .seconds(5)
    /// Forged or altered messages (signature not the author's) one session may hand over
    /// before it is closed: one is refused and the session goes on (a member may relay a
    /// damaged copy it did not make), a stream of them is an attack and costs a signature
    /// check each.
    public static let maxBadMessagesPerSession = 16
    /// Signed edits, deletes and reactions held in memory, unacknowledged, because the
    /// message they change has not arrived yet (a member's own reaction often comes before
    /// the author's message, which another member passes on a moment later). Beyond this the
    /// oldest are dropped; they stay unacknowledged, so they come again on a later session.
    public static let maxWaitingChanges = 256
}

/// Room sync between members (issue 30): which summaries to send and which signed
/// messages to push to which session, in swift-nio style. The driver (the node) feeds it
/// events and performs the actions it returns; time comes in as an argument. Holds no
/// message bodies: only per-room, per-author sequence ranges.
///
/// - When a session with a co-member comes up, both send a `roomHave` for every room they
///   share (joined, both, in this node's view).
/// - A summary from a peer says what it holds; this node pushes what it holds and the peer
///   lacks, if the peer is entitled to it (`entitled`, see `RoomEntitlement`), oldest first
///   per author, at most `maxInFlightPerSessionRoom` unacknowledged per room; more as acks
///   come. Push only: there is no request, so a stranger can ask for nothing, and a summary
///   for a room the session does not share is ignored.
/// - When this node stores a new message, it sends its summary to its other sessions of
///   that room (at most every `haveInterval`) and, after `forwardDelay`, pushes the message
///   to those whose last summary lacks it.
public struct RoomSyncStateMachine: Sendable {
    public enum Action: Equatable, Sendable {
        case sendHave(to: IdentityPublicKey, RoomHave)
        /// Send these stored messages of `author` in `room`, in this order.
        case push(to: IdentityPublicKey, room: RoomID, author: IdentityPublicKey, sequences: [UInt64])
        /// The session handed over too many forged messages.
        case close(IdentityPublicKey, reason: String)
    }

    /// May `peer` have `author`'s message `sequence` of `room`? (`RoomEntitlement`.)
    public typealias Entitled = (
        _ room: RoomID, _ author: IdentityPublicKey, _ sequence: UInt64, _ peer: IdentityPublicKey
    )
        -> Bool

    struct PeerRoom: Sendable {
        /// What the peer holds, as far as this node knows on this session: its summaries,
        /// plus what it acknowledged or handed over, plus what it may not have (never
        /// offered).
        var theirs: [IdentityPublicKey: SequenceRanges] = [:]
        /// Whether its first summary came: nothing is pushed blind.
        var summarized = false
        var inFlight: [IdentityPublicKey: Set<UInt64>] = [:]
        var lastHaveAt: MonotonicInstant?
        var haveDue = false
        var pushDueAt: MonotonicInstant?

        var inFlightCount: Int { inFlight.values.reduce(0) { $0 + $1.count } }
    }

    struct Peer: Sendable {
        var rooms: [RoomID: PeerRoom] = [:]
        var badMessages = 0
    }

    /// What this node holds, per room and author.
    public private(set) var held: [RoomID: [IdentityPublicKey: SequenceRanges]] = [:]
    private var peers: [IdentityPublicKey: Peer] = [:]

    public init() {}

    /// The ranges stored at start (the driver loads them from its store).
    public mutating func load(room: RoomID, author: IdentityPublicKey, ranges: SequenceRanges) {
        held[room, default: [:]][author] = ranges
    }

    public func holds(room: RoomID, author: IdentityPublicKey, sequence: UInt64) -> Bool {
        held[room]?[author]?.contains(sequence) ?? false
    }

    /// This node's summary of a room.
    public func have(_ room: RoomID) -> RoomHave { RoomHave(roomID: room, holding: held[room] ?? [:]) }

    /// A session is up with `peer`; `sharedRooms` are the rooms both have joined in this
    /// node's view. Sends a summary of each.
    public mutating func sessionOpened(
        _ peer: IdentityPublicKey, sharedRooms: [RoomID], now: MonotonicInstant
    ) -> [Action] {
        var p = Peer()
        var actions: [Action] = []
        for room in sharedRooms.sorted() {
            var pr = PeerRoom()
            pr.lastHaveAt = now
            p.rooms[room] = pr
            actions.append(.sendHave(to: peer, have(room)))
        }
        peers[peer] = p
        return actions
    }

    public mutating func sessionClosed(_ peer: IdentityPublicKey) {
        peers[peer] = nil
    }

    /// The room's joined members changed (in this node's view): sessions with members who
    /// are no longer joined stop syncing it at once (nothing more is pushed to a removed
    /// member), sessions with new co-members start (a summary now).
    public mutating func membershipChanged(
        room: RoomID, joined: Set<IdentityPublicKey>, me: IdentityPublicKey, now: MonotonicInstant
    ) -> [Action] {
        var actions: [Action] = []
        let iAmIn = joined.contains(me)
        for key in peers.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            let shared = iAmIn && joined.contains(key)
            if !shared {
                peers[key]?.rooms[room] = nil
            } else if peers[key]?.rooms[room] == nil {
                var pr = PeerRoom()
                pr.lastHaveAt = now
                peers[key]?.rooms[room] = pr
                actions.append(.sendHave(to: key, have(room)))
            }
        }
        return actions
    }

    /// This node stored a message (its own, from its author, or pushed by `from`). The peer
    /// that handed it over holds it; the others hear of it by summary, and get it pushed
    /// after `forwardDelay` if they still lack it.
    public mutating func stored(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64, from source: IdentityPublicKey?,
        now: MonotonicInstant
    ) -> [Action] {
        held[room, default: [:]][author, default: SequenceRanges()].insert(sequence)
        var actions: [Action] = []
        for key in peers.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            guard var pr = peers[key]?.rooms[room] else { continue }
            if key == source || key == author {
                pr.theirs[author, default: SequenceRanges()].insert(sequence)
            } else {
                if pr.pushDueAt == nil { pr.pushDueAt = now + RoomSyncLimits.forwardDelay }
                if let last = pr.lastHaveAt, now - last < RoomSyncLimits.haveInterval {
                    pr.haveDue = true
                } else {
                    pr.lastHaveAt = now
                    pr.haveDue = false
                    actions.append(.sendHave(to: key, have(room)))
                }
            }
            peers[key]?.rooms[room] = pr
        }
        return actions
    }

    /// A summary from `peer`. Ignored for a room the session does not share (a stranger, a
    /// removed member, a room this node is not in). Pushes what the peer lacks.
    public mutating func haveReceived(
        _ summary: RoomHave, from peer: IdentityPublicKey, now: MonotonicInstant, entitled: Entitled
    ) -> [Action] {
        guard var pr = peers[peer]?.rooms[summary.roomID] else { return [] }
        // A summary adds to what this node knew of the peer on this session (what it
        // acknowledged before its summary arrived stays known; what is in flight to it
        // stays on its way): nothing is pushed twice on one session.
        for (a, ranges) in summary.authors {
            for r in ranges.ranges { pr.theirs[a, default: SequenceRanges()].insert(r) }
        }
        // The first summary from this session for this room is answered with ours: the peer
        // may have ignored the one we sent (it arrived before the peer knew us as a joined
        // member: the join travels in the outbox, the summary right away). Once per room and
        // session, so two nodes answer each other at most once.
        let first = !pr.summarized
        pr.summarized = true
        var actions: [Action] = []
        if first {
            pr.lastHaveAt = now
            pr.haveDue = false
            actions.append(.sendHave(to: peer, have(summary.roomID)))
        }
        peers[peer]?.rooms[summary.roomID] = pr
        return actions + push(to: peer, room: summary.roomID, entitled: entitled)
    }

    /// `peer` acknowledged (stored) a pushed message, or any message of the room this node
    /// sent it: it holds it now; the window has room for more.
    public mutating func acknowledged(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64, by peer: IdentityPublicKey, entitled: Entitled
    ) -> [Action] {
        guard var pr = peers[peer]?.rooms[room] else { return [] }
        pr.inFlight[author]?.remove(sequence)
        pr.theirs[author, default: SequenceRanges()].insert(sequence)
        peers[peer]?.rooms[room] = pr
        return push(to: peer, room: room, entitled: entitled)
    }

    /// `peer` handed over a message whose signature is not its author's. Closes the session
    /// after `maxBadMessagesPerSession`.
    public mutating func badMessage(from peer: IdentityPublicKey) -> [Action] {
        guard peers[peer] != nil else { return [] }
        peers[peer]?.badMessages += 1
        guard let n = peers[peer]?.badMessages, n >= RoomSyncLimits.maxBadMessagesPerSession else { return [] }
        peers[peer] = nil
        return [
            .close(peer, reason: "\(n) room messages whose signature is not their author's")
        ]
    }

    /// Summaries and pushes whose time has come.
    public mutating func tick(now: MonotonicInstant, entitled: Entitled) -> [Action] {
        var actions: [Action] = []
        for key in peers.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            guard let rooms = peers[key]?.rooms else { continue }
            for room in rooms.keys.sorted() {
                guard var pr = peers[key]?.rooms[room] else { continue }
                if pr.haveDue, let last = pr.lastHaveAt, now - last >= RoomSyncLimits.haveInterval {
                    pr.haveDue = false
                    pr.lastHaveAt = now
                    actions.append(.sendHave(to: key, have(room)))
                }
                var pushNow = false
                if let due = pr.pushDueAt, now >= due {
                    pr.pushDueAt = nil
                    pushNow = true
                }
                peers[key]?.rooms[room] = pr
                if pushNow { actions += push(to: key, room: room, entitled: entitled) }
            }
        }
        return actions
    }

    /// When `tick` next has something to do (nil: nothing pending).
    public var nextDeadline: MonotonicInstant? {
        var next: MonotonicInstant?
        for p in peers.values {
            for pr in p.rooms.values {
                var candidates: [MonotonicInstant] = []
                if pr.haveDue, let last = pr.lastHaveAt { candidates.append(last + RoomSyncLimits.haveInterval) }
                if let due = pr.pushDueAt { candidates.append(due) }
                for c in candidates where next == nil || c < next! { next = c }
            }
        }
        return next
    }

    /// Messages in flight to `peer` for `room` (for tests and the status).
    public func inFlight(to peer: IdentityPublicKey, room: RoomID) -> Int {
        peers[peer]?.rooms[room]?.inFlightCount ?? 0
    }

    private mutating func push(to peer: IdentityPublicKey, room: RoomID, entitled: Entitled) -> [Action] {
        guard var pr = peers[peer]?.rooms[room], pr.summarized, let mine = held[room] else { return [] }
        var theirs = pr.theirs
        var capacity = RoomSyncLimits.maxInFlightPerSessionRoom - pr.inFlightCount
        var actions: [Action] = []
        for author in mine.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            guard capacity > 0, let ranges = mine[author] else { break }
            var known = theirs[author] ?? SequenceRanges()
            var chosen: [UInt64] = []
            // Each pass either fills the capacity or marks what it looked at as known (sent,
            // or never to be offered to this peer), so the loop ends.
            while capacity > 0 {
                let missing = ranges.subtracting(known, limit: capacity)
                if missing.isEmpty { break }
                for s in missing {
                    known.insert(s)
                    if entitled(room, author, s, peer) {
                        chosen.append(s)
                        capacity -= 1
                    }
                }
            }
            theirs[author] = known
            if !chosen.isEmpty {
                pr.inFlight[author, default: []].formUnion(chosen)
                actions.append(.push(to: peer, room: room, author: author, sequences: chosen))
            }
        }
        pr.theirs = theirs
        peers[peer]?.rooms[room] = pr
        return actions
    }
}
