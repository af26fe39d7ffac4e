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
    /// A member sends its summary of each room to one of its sessions of that room (in turn)
    /// this often, so a member that every relay happened to pass over (relays are bounded,
    /// `RoomFanOut.relayPeers`: about e⁻⁴, 2 % of the members, each time) and that keeps its
    /// sessions open still gets the message within about this long: the peer pushes what
    /// the summary lacks. One summary per room per 15 seconds per member, whatever the
    /// room's size (a summary is 51 bytes plus 49 per author who wrote).
    public static let antiEntropyInterval: Duration = .seconds(15)
    /// Sessions of one room a member sends its summary to when they open (or when the
    /// room gains that co-member), at a time: each peer that gets it pushes what the member
    /// lacks, so a laptop that comes back to a room of 1,000 receives each missed message
    /// at most about twice, not once per member online. Other sessions learn its summary by
    /// anti-entropy, in turn.
    public static let startSummaries = 2
    /// A stored message is relayed (`RoomFanOut.relayPeers`) only if it was written at most
    /// this long ago by its author's clock: a new message spreads by relays, while what a
    /// member catches up (thousands, old) is held by the others already and relaying it
    /// would send each of them a copy they have. A wrong clock costs only efficiency: an
    /// old message that was not relayed comes by summaries.
    public static let relayWindow: Duration = .seconds(60)
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
/// - When this node stores a new message, it picks at most `RoomFanOut.relayPeers` of its
///   other sessions of that room that are not known to hold it, sends them its summary (at
///   most every `haveInterval`) and, after `forwardDelay`, pushes them that message if their
///   last summary still lacks it. Bounded, so a message costs each member the same in a
///   room of any size.
/// - Every `antiEntropyInterval`, it sends its summary of each room to one of the room's
///   sessions in turn: whatever the relays missed is pushed back.
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
        /// Messages this node chose to relay to the peer (`stored`), pushed at `relayDueAt`
        /// if the peer still seems to lack them.
        var relay: [IdentityPublicKey: Set<UInt64>] = [:]
        var relayDueAt: MonotonicInstant?

        var inFlightCount: Int { inFlight.values.reduce(0) { $0 + $1.count } }
    }

    struct Peer: Sendable {
        var rooms: [RoomID: PeerRoom] = [:]
        var badMessages = 0
    }

    /// What this node holds, per room and author.
    public private(set) var held: [RoomID: [IdentityPublicKey: SequenceRanges]] = [:]
    private var peers: [IdentityPublicKey: Peer] = [:]
    /// Per room: when the last anti-entropy summary went out, and to whom (the next goes to
    /// the session after it in key order).
    private var antiEntropy: [RoomID: (at: MonotonicInstant, peer: IdentityPublicKey?)] = [:]
    /// Per room: the open sessions that got this node's summary when they opened
    /// (at most `startSummaries`).
    private var startSummarized: [RoomID: Set<IdentityPublicKey>] = [:]

    /// Whether a session opening for `room` gets this node's summary now (and records it).
    private mutating func takeStartSummary(_ room: RoomID, _ peer: IdentityPublicKey) -> Bool {
        if startSummarized[room]?.contains(peer) ?? false { return true }
        guard (startSummarized[room]?.count ?? 0) < RoomSyncLimits.startSummaries else { return false }
        startSummarized[room, default: []].insert(peer)
        return true
    }

    /// Where this node's turn of anti-entropy starts among a room's sessions: random per
    /// node, so that the members of a room do not all send their first summary to the same
    /// member (which would then push to every one of them).
    private let antiEntropyStart: UInt64

    public init() {
        var rng = SystemRandomNumberGenerator()
        antiEntropyStart = rng.next()
    }

    /// With a fixed start of the anti-entropy turn (tests, the simulation).
    public init(antiEntropyStart: UInt64) { self.antiEntropyStart = antiEntropyStart }

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
    /// node's view. Sends a summary of each, unless `startSummaries` open sessions of that
    /// room already got one (anti-entropy reaches this one in turn).
    public mutating func sessionOpened(
        _ peer: IdentityPublicKey, sharedRooms: [RoomID], now: MonotonicInstant
    ) -> [Action] {
        var p = Peer()
        var actions: [Action] = []
        for room in sharedRooms.sorted() {
            p.rooms[room] = PeerRoom()
            if antiEntropy[room] == nil { antiEntropy[room] = (now, nil) }
            if takeStartSummary(room, peer) {
                p.rooms[room]?.lastHaveAt = now
                actions.append(.sendHave(to: peer, have(room)))
            }
        }
        peers[peer] = p
        return actions
    }

    public mutating func sessionClosed(_ peer: IdentityPublicKey) {
        peers[peer] = nil
        for room in startSummarized.keys { startSummarized[room]?.remove(peer) }
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
                startSummarized[room]?.remove(key)
            } else if peers[key]?.rooms[room] == nil {
                peers[key]?.rooms[room] = PeerRoom()
                if antiEntropy[room] == nil { antiEntropy[room] = (now, nil) }
                if takeStartSummary(room, key) {
                    peers[key]?.rooms[room]?.lastHaveAt = now
                    actions.append(.sendHave(to: key, have(room)))
                }
            }
        }
        return actions
    }

    /// This node stored a message (its own, from its author, or pushed by `from`). The peer
    /// that handed it over holds it; at most `RoomFanOut.relayPeers` of the others that are
    /// not known to hold it (picked with `rng`, those whose summary came first) hear of it by
    /// summary, and get it pushed after `forwardDelay` if they still lack it.
    /// `relay`: whether the message is new enough to relay (`RoomSyncLimits.relayWindow`);
    /// an old one caught up is only recorded. `queuedFor`: the members this node's outbox
    /// delivers it to (its author's direct recipients, `RoomFanOut`): counted as holding it,
    /// never relayed to (a second copy of each).
    public mutating func stored<R: RandomNumberGenerator>(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64, from source: IdentityPublicKey?,
        now: MonotonicInstant, relay: Bool = true, queuedFor: Set<IdentityPublicKey> = [],
        using rng: inout R
    ) -> [Action] {
        held[room, default: [:]][author, default: SequenceRanges()].insert(sequence)
        var candidates: [IdentityPublicKey] = []
        var summarized: Set<IdentityPublicKey> = []
        for (key, p) in peers {
            guard var pr = p.rooms[room] else { continue }
            if key == source || key == author || queuedFor.contains(key) {
                pr.theirs[author, default: SequenceRanges()].insert(sequence)
                peers[key]?.rooms[room] = pr
            } else if !(pr.theirs[author]?.contains(sequence) ?? false) {
                candidates.append(key)
                if pr.summarized { summarized.insert(key) }
            }
        }
        guard relay else { return [] }
        var actions: [Action] = []
        let chosen = RoomFanOut.choose(
            candidates, preferring: summarized, limit: RoomFanOut.relayPeers, using: &rng)
        for key in chosen {
            guard var pr = peers[key]?.rooms[room] else { continue }
            pr.relay[author, default: []].insert(sequence)
            if pr.relayDueAt == nil { pr.relayDueAt = now + RoomSyncLimits.forwardDelay }
            if let last = pr.lastHaveAt, now - last < RoomSyncLimits.haveInterval {
                pr.haveDue = true
            } else {
                pr.lastHaveAt = now
                pr.haveDue = false
                actions.append(.sendHave(to: key, have(room)))
            }
            peers[key]?.rooms[room] = pr
        }
        return actions
    }

    /// `stored` with the system's random generator.
    public mutating func stored(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64, from source: IdentityPublicKey?,
        now: MonotonicInstant, relay: Bool = true, queuedFor: Set<IdentityPublicKey> = []
    ) -> [Action] {
        var rng = SystemRandomNumberGenerator()
        return stored(
            room: room, author: author, sequence: sequence, from: source, now: now, relay: relay,
            queuedFor: queuedFor, using: &rng)
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
        if first, takeStartSummary(summary.roomID, peer) {
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
        let keys = peers.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) })
        var roomsWithSessions: Set<RoomID> = []
        for key in keys {
            guard let rooms = peers[key]?.rooms else { continue }
            for room in rooms.keys.sorted() {
                roomsWithSessions.insert(room)
                guard var pr = peers[key]?.rooms[room] else { continue }
                if pr.haveDue, let last = pr.lastHaveAt, now - last >= RoomSyncLimits.haveInterval {
                    pr.haveDue = false
                    pr.lastHaveAt = now
                    actions.append(.sendHave(to: key, have(room)))
                }
                var relay: [IdentityPublicKey: Set<UInt64>] = [:]
                if let due = pr.relayDueAt, now >= due {
                    pr.relayDueAt = nil
                    relay = pr.relay
                    pr.relay = [:]
                }
                peers[key]?.rooms[room] = pr
                if !relay.isEmpty { actions += push(to: key, room: room, only: relay, entitled: entitled) }
            }
        }
        // Anti-entropy: one summary per room and interval, to the sessions in turn.
        for room in roomsWithSessions.sorted() {
            guard let last = antiEntropy[room] else {
                antiEntropy[room] = (now, nil)
                continue
            }
            guard now - last.at >= RoomSyncLimits.antiEntropyInterval else { continue }
            let sharing = keys.filter { peers[$0]?.rooms[room] != nil }
            let next: IdentityPublicKey
            if let previous = last.peer {
                next = sharing.first { previous.bytes.lexicographicallyPrecedes($0.bytes) } ?? sharing[0]
            } else {
                next = sharing[Int(antiEntropyStart % UInt64(sharing.count))]
            }
            antiEntropy[room] = (now, next)
            peers[next]?.rooms[room]?.lastHaveAt = now
            actions.append(.sendHave(to: next, have(room)))
        }
        for room in antiEntropy.keys where !roomsWithSessions.contains(room) { antiEntropy[room] = nil }
        return actions
    }

    /// When `tick` next has something to do (nil: nothing pending).
    public var nextDeadline: MonotonicInstant? {
        var next: MonotonicInstant?
        var roomsWithSessions: Set<RoomID> = []
        for p in peers.values {
            for (room, pr) in p.rooms {
                roomsWithSessions.insert(room)
                var candidates: [MonotonicInstant] = []
                if pr.haveDue, let last = pr.lastHaveAt { candidates.append(last + RoomSyncLimits.haveInterval) }
                if let due = pr.relayDueAt { candidates.append(due) }
                for c in candidates where next == nil || c < next! { next = c }
            }
        }
        for room in roomsWithSessions {
            // Started when the room's first session opened (`sessionOpened`, `membershipChanged`).
            let due = antiEntropy[room].map { $0.at + RoomSyncLimits.antiEntropyInterval }
            if let due, next == nil || due < next! { next = due }
        }
        return next
    }

    /// Messages in flight to `peer` for `room` (for tests and the status).
    public func inFlight(to peer: IdentityPublicKey, room: RoomID) -> Int {
        peers[peer]?.rooms[room]?.inFlightCount ?? 0
    }

    /// Pushes the relayed messages `only` that the peer still seems to lack (not everything
    /// it lacks: what this node knows of it between summaries is stale, and a relay must
    /// cost one message per message).
    private mutating func push(
        to peer: IdentityPublicKey, room: RoomID, only: [IdentityPublicKey: Set<UInt64>], entitled: Entitled
    ) -> [Action] {
        // Unlike `push(to:room:entitled:)` this needs no summary from the peer: it sends the
        // few new messages chosen for it (a peer whose summary never came, because it sends
        // it to `startSummaries` sessions only, still gets relays), never its backlog.
        guard var pr = peers[peer]?.rooms[room] else { return [] }
        var capacity = RoomSyncLimits.maxInFlightPerSessionRoom - pr.inFlightCount
        var actions: [Action] = []
        for author in only.keys.sorted(by: { $0.bytes.lexicographicallyPrecedes($1.bytes) }) {
            guard capacity > 0 else { break }
            var chosen: [UInt64] = []
            for s in (only[author] ?? []).sorted() where capacity > 0 {
                guard holds(room: room, author: author, sequence: s),
                    !(pr.theirs[author]?.contains(s) ?? false), !(pr.inFlight[author]?.contains(s) ?? false)
                else { continue }
                pr.theirs[author, default: SequenceRanges()].insert(s)
                if entitled(room, author, s, peer) {
                    chosen.append(s)
                    capacity -= 1
                }
            }
            if !chosen.isEmpty {
                pr.inFlight[author, default: []].formUnion(chosen)
                actions.append(.push(to: peer, room: room, author: author, sequences: chosen))
            }
        }
        peers[peer]?.rooms[room] = pr
        return actions
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
