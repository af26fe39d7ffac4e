import HeapModule
import ParleyCore
import ParleyNodeCore
import SeededRandom

/// A room of in-process members that sync, for tests and parley-bench (issue 30, "Rooms as
/// big as an office"): each member is a real `RoomSyncStateMachine`, entitlement is the real
/// `RoomEntitlement` over a room really built of signed operations and resolved by
/// `RoomResolution`, authors choose their first recipients by the real `RoomFanOut`. What
/// is simulated: the network (every two online members have a session, a record arrives
/// after `latency`, a member going offline loses what was in flight to it), the author's
/// durable outbox (kept until acknowledged, sent when both are online), the clock (a mock:
/// `now` only moves with events) and randomness (seeded). No I/O, no signatures per message
/// (their bytes are counted by the wire format's sizes).
///
/// Discrete events in time order; every loop is bounded by the caller's `until`.
public struct RoomSyncSimulation {
    /// Bytes on the wire of each record kind: the record header (type, length: 5), the
    /// payload, and the transport's 16-byte tag.
    public static let recordOverhead = 5 + 16
    /// An acknowledgement: one 16-byte message id.
    public static let ackBytes = recordOverhead + 16

    /// What one member sent and received.
    public struct Traffic: Equatable, Sendable {
        public var recordsSent = 0
        public var bytesSent = 0
        public var recordsReceived = 0
        public var bytesReceived = 0
        /// Room messages received that it already held.
        public var redundant = 0
        public init() {}
    }

    enum Payload {
        case have(RoomHave)
        /// A signed message: `direct` from its author's outbox, otherwise passed on by sync.
        case message(author: Int, sequence: UInt64, direct: Bool)
        case ack(author: Int, sequence: UInt64)
        /// The room operation `writeOperation` made (its actor's card after it, once).
        case operation
        case operationAck
        /// An operation summary (features bit 5): whether the sender holds the operation.
        case operationsHave(holds: Bool)
    }

    /// Ordered by (at, order): `order` is unique (`push` numbers them), so events at the same
    /// time run in the order they were scheduled.
    struct Event: Comparable {
        var at: MonotonicInstant
        var order: Int
        var kind: Kind
        enum Kind {
            case deliver(from: Int, to: Int, epochs: (Int, Int), Payload)
            case tick(Int)
        }

        static func < (a: Event, b: Event) -> Bool { (a.at, a.order) < (b.at, b.order) }
        static func == (a: Event, b: Event) -> Bool { (a.at, a.order) == (b.at, b.order) }
    }

    public let keys: [IdentityPublicKey]
    public let roomID: RoomID
    public let latency: Duration
    /// Body bytes of every message written.
    public let bodyBytes: Int
    public private(set) var now = MonotonicInstant(nanoseconds: 1_000_000_000)
    public private(set) var traffic: [Traffic]
    public private(set) var online: [Bool]
    /// When each member first held each message (author, sequence).
    public private(set) var firstHeld: [[Int: [UInt64: MonotonicInstant]]]

    private let state: RoomState
    private let operationsByHash: [RoomOperationHash: RoomOperation]
    private let creatorKeys: IdentityKeyPair
    private let membershipThen: RoomFold?
    private var machines: [RoomSyncStateMachine]
    private var rng: SplitMix64
    private var index: [IdentityPublicKey: Int] = [:]
    private var epoch: [Int]
    private var heap = Heap<Event>()
    private var order = 0
    private var scheduledTick: [MonotonicInstant?]
    /// Per author: per recipient, the messages queued for it and not acknowledged.
    private var outbox: [[Int: Set<UInt64>]]
    private var written: [UInt64]
    /// (member, message) pairs held, and messages written: converged when every member
    /// holds every message.
    private var heldCount = 0
    private var writtenCount = 0

    // One room operation's spread (`writeOperation`): who holds it, since when, and whether
    // members compare operation summaries (features bit 5) or flood it (older nodes).
    public var operationSummaries = false
    public private(set) var operationFirstHeld: [MonotonicInstant?] = []
    private var operation: RoomOperation?
    private var operationAfter: RoomState?
    private var operationHeldCount = 0
    /// Per sender: the members it queued the operation for and that did not acknowledge it.
    private var operationOutbox: [Set<Int>] = []
    private var summaryReplyAt: [Int: [Int: MonotonicInstant]] = [:]
    /// How many times members queued the room's whole log for the newcomer (the newcomer
    /// compares summaries too: only the adder should).
    public private(set) var wholeLogsQueued = 0
    /// Bytes of one operation record and of its actor's card after it.
    public private(set) var operationBytes = 0
    public static let cardBytes = recordOverhead + RoomID.length + 160

    /// A room of `members` identities (member 0 created it and listed the first
    /// `RoomLimits.maxCreateMembers`; it added the others one by one; every member joined),
    /// all offline.
    public init(members: Int, seed: UInt64, latency: Duration = .milliseconds(2), bodyBytes: Int = 100) throws {
        precondition(members >= 2 && members <= RoomLimits.maxMembers)
        var rng = SplitMix64(seed: seed)
        let pairs = try SeededIdentities.make(members, using: &rng)
        let creator = pairs[0]
        var nonce = [UInt8](repeating: 0, count: RoomID.length)
        for b in nonce.indices { nonce[b] = UInt8(truncatingIfNeeded: rng.next()) }
        let listed = pairs.prefix(RoomLimits.maxCreateMembers).map(\.publicKey)
        let root = try RoomOperation.create(
            name: "office", members: listed, by: creator, createdAt: 1, nonce: RoomID(exactly: nonce))
        var ops: [RoomOperation] = [root]
        var last = root
        for p in pairs.dropFirst(RoomLimits.maxCreateMembers) {
            last = try RoomOperation.change(
                .add(p.publicKey), roomID: root.roomID, after: [last], by: creator, createdAt: 2)
            ops.append(last)
        }
        for p in pairs.dropFirst() {
            last = try RoomOperation.change(.join, roomID: root.roomID, after: [last], by: p, createdAt: 3)
            ops.append(last)
        }
        guard let state = RoomResolution(root: root, operations: ops)?.state, state.joined.count == members else {
            throw SimulationError.roomDidNotResolve
        }
        self.state = state
        let byHash = Dictionary(uniqueKeysWithValues: ops.map { ($0.hash, $0) })
        operationsByHash = byHash
        creatorKeys = creator
        membershipThen = RoomEntitlement.membership(at: state.heads.map(\.hash), state: state, operations: byHash)
        keys = pairs.map(\.publicKey)
        roomID = root.roomID
        self.latency = latency
        self.bodyBytes = bodyBytes
        self.rng = rng
        for (i, k) in keys.enumerated() { index[k] = i }
        var starts = SplitMix64(seed: seed ^ 0x5eed)
        machines = (0..<members).map { _ in RoomSyncStateMachine(antiEntropyStart: starts.next()) }
        traffic = Array(repeating: Traffic(), count: members)
        online = Array(repeating: false, count: members)
        epoch = Array(repeating: 0, count: members)
        scheduledTick = Array(repeating: nil, count: members)
        outbox = Array(repeating: [:], count: members)
        written = Array(repeating: 0, count: members)
        firstHeld = Array(repeating: [:], count: members)
    }

    public enum SimulationError: Error { case roomDidNotResolve }

    /// Every member holds the operation `writeOperation` made.
    public var operationConverged: Bool { operationHeldCount == keys.count }

    /// Member 0 (the owner) adds a new member (not simulated: an invitee that is not online)
    /// and queues the add by `RoomDistribution`, narrowed by `RoomOperationFanOut` when
    /// `operationSummaries`; each member that keeps it does the same. The whole log the plan
    /// queues for the newcomer is counted apart (`wholeLogsQueued`), not delivered.
    public mutating func writeOperation() throws {
        let newcomer = IdentityKeyPair.generate().publicKey
        let op = try RoomOperation.change(
            .add(newcomer), roomID: roomID, after: state.heads, by: creatorKeys, createdAt: 4)
        guard
            let after = RoomResolver.resolve(
                root: operationsByHash.values.first { $0.kind == .create }!,
                operations: Array(operationsByHash.values) + [op])
        else { throw SimulationError.roomDidNotResolve }
        operation = op
        operationAfter = after
        operationBytes = Self.recordOverhead + op.encoded().count
        operationFirstHeld = Array(repeating: nil, count: keys.count)
        operationOutbox = Array(repeating: [], count: keys.count)
        operationHeldCount = 0
        wholeLogsQueued = 0
        keepOperation(at: 0, from: nil)
    }

    private mutating func keepOperation(at i: Int, from: Int?) {
        guard let op = operation, let after = operationAfter, let newcomer = op.target, operationFirstHeld[i] == nil
        else { return }
        operationFirstHeld[i] = now
        operationHeldCount += 1
        var plan = RoomDistribution.plan(
            for: op, before: state, after: after, me: keys[i], receivedFrom: from.map { keys[$0] })
        if operationSummaries {
            let onlineKeys = Set(keys.indices.filter { online[$0] && $0 != i }.map { keys[$0] })
            plan = RoomOperationFanOut.narrow(
                plan, for: op, after: after, me: keys[i], summarizing: Set(keys + [newcomer]), online: onlineKeys,
                using: &rng)
        }
        for r in plan.operationTo {
            guard let j = index[r] else { continue }  // the newcomer: not simulated
            operationOutbox[i].insert(j)
            send(.operation, from: i, to: j)
        }
        // The room's whole log to the newcomer (offline here): counted apart, not delivered.
        wholeLogsQueued += plan.wholeLogTo.count
    }

    /// The bytes of one signed room message with this simulation's body (one anchor).
    public var signedMessageBytes: Int { 83 + RoomOperationHash.length + bodyBytes + 64 }
    /// The same body as a direct chat record (id, sequence, createdAt, body).
    public var directChatBytes: Int { Self.recordOverhead + 32 + bodyBytes }

    public func holds(_ member: Int, author: Int, sequence: UInt64) -> Bool {
        machines[member].holds(room: roomID, author: keys[author], sequence: sequence)
    }

    /// Every member holds every message written so far.
    public var converged: Bool { heldCount == writtenCount * keys.count }

    public mutating func resetTraffic() { traffic = Array(repeating: Traffic(), count: keys.count) }

    // MARK: Events

    /// Brings members online: a session with every other online member (both send their
    /// summaries), and each author's outbox sends what it queued for them.
    public mutating func setOnline(_ members: [Int]) {
        for i in members where !online[i] {
            online[i] = true
            epoch[i] += 1
            for j in keys.indices where j != i && online[j] {
                let a = machines[i].sessionOpened(keys[j], sharedRooms: [roomID], now: now)
                perform(a, by: i)
                let b = machines[j].sessionOpened(keys[i], sharedRooms: [roomID], now: now)
                perform(b, by: j)
                reschedule(j)
                flushOutbox(author: i, to: j)
                flushOutbox(author: j, to: i)
            }
            reschedule(i)
        }
    }

    /// Takes members offline: their sessions end, what was in flight to or from them is lost.
    public mutating func setOffline(_ members: [Int]) {
        for i in members where online[i] {
            online[i] = false
            epoch[i] += 1
            for j in keys.indices where j != i && online[j] {
                machines[i].sessionClosed(keys[j])
                machines[j].sessionClosed(keys[i])
                reschedule(j)
            }
            reschedule(i)
        }
    }

    /// `author` writes a message: it holds it, queues it for its `RoomFanOut` recipients
    /// (every member syncs here), and sync relays it. Returns its sequence.
    @discardableResult
    public mutating func write(author: Int) -> UInt64 {
        written[author] += 1
        writtenCount += 1
        heldCount += 1
        let seq = written[author]
        firstHeld[author][author, default: [:]][seq] = now
        let onlineKeys = Set(keys.indices.filter { online[$0] && $0 != author }.map { keys[$0] })
        let recipients = RoomFanOut.messageRecipients(
            joined: state.joined, me: keys[author], syncing: Set(keys), online: onlineKeys, using: &rng)
        let actions = machines[author].stored(
            room: roomID, author: keys[author], sequence: seq, from: nil, now: now, queuedFor: Set(recipients),
            using: &rng)
        for r in recipients {
            guard let j = index[r] else { continue }
            outbox[author][j, default: []].insert(seq)
            if online[author] && online[j] {
                send(.message(author: author, sequence: seq, direct: true), from: author, to: j)
            }
        }
        perform(actions, by: author)
        reschedule(author)
        return seq
    }

    /// Runs events until `deadline` (or until `stop` says so, checked after each event).
    public mutating func run(until deadline: MonotonicInstant, stop: (RoomSyncSimulation) -> Bool = { _ in false }) {
        while let first = heap.min, first.at <= deadline {
            let e = heap.removeMin()
            if e.at > now { now = e.at }
            switch e.kind {
            case let .deliver(from, to, epochs, payload):
                guard online[from], online[to], epochs == (epoch[from], epoch[to]) else { continue }
                receive(payload, from: from, to: to)
            case .tick(let i):
                scheduledTick[i] = nil
                guard online[i] else { continue }
                let actions = machines[i].tick(now: now, entitled: entitled)
                perform(actions, by: i)
                reschedule(i)
            }
            if stop(self) { return }
        }
        if deadline > now { now = deadline }
    }

    // MARK: Internals

    private var entitled: RoomSyncStateMachine.Entitled {
        let state = state
        let then = membershipThen
        return { _, author, _, peer in
            RoomEntitlement.verdict(author: author, membershipThen: then, for: peer, state: state) == .entitled
        }
    }

    private mutating func flushOutbox(author: Int, to j: Int) {
        if operationOutbox.indices.contains(author), operationOutbox[author].contains(j) {
            send(.operation, from: author, to: j)
        }
        for seq in (outbox[author][j] ?? []).sorted() {
            send(.message(author: author, sequence: seq, direct: true), from: author, to: j)
        }
    }

    private mutating func receive(_ payload: Payload, from: Int, to: Int) {
        switch payload {
        case .have(let h):
            perform(machines[to].haveReceived(h, from: keys[from], now: now, entitled: entitled), by: to)
        case let .message(author, seq, _):
            if holds(to, author: author, sequence: seq) {
                traffic[to].redundant += 1
            } else {
                firstHeld[to][author, default: [:]][seq] = now
                heldCount += 1
                let writtenAt = firstHeld[author][author]?[seq] ?? now
                perform(
                    machines[to].stored(
                        room: roomID, author: keys[author], sequence: seq, from: keys[from], now: now,
                        relay: now - writtenAt <= RoomSyncLimits.relayWindow, using: &rng),
                    by: to)
            }
            send(.ack(author: author, sequence: seq), from: to, to: from)
        case .operation:
            if operationFirstHeld[to] != nil {
                traffic[to].redundant += 1
            } else {
                keepOperation(at: to, from: from)
            }
            send(.operationAck, from: to, to: from)
        case .operationAck:
            operationOutbox[to].remove(from)
        case .operationsHave(let theyHold):
            let iHold = operation != nil && operationFirstHeld[to] != nil
            if iHold && !theyHold {
                operationOutbox[to].insert(from)
                send(.operation, from: to, to: from)
            } else if !iHold && theyHold {
                let last = summaryReplyAt[to]?[from]
                if last.map({ now - $0 >= RoomOperationSummaryLimits.replyInterval }) ?? true {
                    summaryReplyAt[to, default: [:]][from] = now
                    send(.operationsHave(holds: false), from: to, to: from)
                }
            }
        case let .ack(author, seq):
            if author == to { outbox[to][from]?.remove(seq) }
            perform(
                machines[to].acknowledged(
                    room: roomID, author: keys[author], sequence: seq, by: keys[from], entitled: entitled),
                by: to)
        }
        reschedule(to)
    }

    private mutating func perform(_ actions: [RoomSyncStateMachine.Action], by i: Int) {
        for action in actions {
            switch action {
            case let .sendHave(peer, have):
                guard let j = index[peer] else { continue }
                send(.have(have), from: i, to: j)
                if operationSummaries {
                    send(.operationsHave(holds: operation != nil && operationFirstHeld[i] != nil), from: i, to: j)
                }
            case let .push(peer, _, author, sequences):
                guard let j = index[peer], let a = index[author] else { continue }
                for s in sequences { send(.message(author: a, sequence: s, direct: false), from: i, to: j) }
            case .close:
                preconditionFailure("no member misbehaves in the simulation")
            }
        }
    }

    private func size(_ p: Payload) -> Int {
        switch p {
        case .have(let h): return Self.recordOverhead + h.encoded().count
        case .message: return Self.recordOverhead + signedMessageBytes
        case .ack, .operationAck: return Self.ackBytes
        // The operation, then its actor's card (room cards: once per session, and one
        // operation is measured here).
        case .operation: return operationBytes + Self.cardBytes
        // Room id, a count, one head.
        case .operationsHave: return Self.recordOverhead + RoomID.length + 1 + RoomOperationHash.length
        }
    }

    private mutating func send(_ p: Payload, from: Int, to: Int) {
        guard online[from], online[to] else { return }
        let bytes = size(p)
        traffic[from].recordsSent += 1
        traffic[from].bytesSent += bytes
        traffic[to].recordsReceived += 1
        traffic[to].bytesReceived += bytes
        push(
            Event(at: now + latency, order: 0, kind: .deliver(from: from, to: to, epochs: (epoch[from], epoch[to]), p)))
    }

    private mutating func reschedule(_ i: Int) {
        guard online[i], let due = machines[i].nextDeadline else { return }
        let at = max(due, now)
        if let s = scheduledTick[i], s <= at { return }
        scheduledTick[i] = at
        push(Event(at: at, order: 0, kind: .tick(i)))
    }

    private mutating func push(_ e: Event) {
        var e = e
        order += 1
        e.order = order
        heap.insert(e)
    }
}
