import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Room sync (issue 30; docs/PROTOCOL.md "Room sync" and "Operation summaries"): signed
/// room messages that any member passes on to another, and the summaries members compare.
/// The decisions are `RoomSyncStateMachine`'s (what to announce and push),
/// `RoomEntitlement`'s (who may have a message), `RoomFanOut`'s and
/// `RoomOperationFanOut`'s (who gets a new message or operation directly); this driver
/// stores, verifies, signs and sends, feeds the machine its events and is the one
/// performer of `RoomSyncStateMachine.Action`.
///
/// - Events: sessions start and end, membership changes, the tick, acknowledgements,
///   members' summaries (this file).
/// - This node's own messages and changes: fan-out, signing, the signed form to send
///   (RoomSyncDriver+OwnMessages.swift).
/// - Signed messages and changes handed over by members (RoomSyncDriver+Receive.swift).
/// - Operation summaries (RoomSyncDriver+OperationSummaries.swift).
///
/// It owns its state (`RoomSyncBook`); the messages are the store's (`RoomSyncStore`).
/// Everything runs on the node's event loop (the loop is its lock).
final class RoomSyncDriver<Host: RoomSyncHost> {
    typealias Link = Host.Link

    /// Only the room sync concern of the store.
    let store: any RoomSyncStore
    /// This node's identity: it signs this node's room messages and changes.
    let identity: IdentityKeyPair
    let clock: any NodeClock
    let log: Logger
    /// Forged, misdirected or refused messages: one line per peer per interval.
    let attackLog: RateLimitedLog
    /// What a member can make this node note at will (messages naming operations not held,
    /// changes naming messages not held): once per peer per interval.
    let noticeLog: RateLimitedLog
    /// The node (set once it is built; it owns this driver through `RoomBook`).
    unowned var host: Host?
    /// The sync state machine, what was pushed and not acknowledged, who syncs, the
    /// summary bounds and the changes waiting for their target.
    var book = RoomSyncBook()

    var me: IdentityPublicKey { identity.publicKey }
    var nowMs: Int64 { clock.wallMilliseconds() }

    init(
        store: any RoomSyncStore, identity: IdentityKeyPair, clock: any NodeClock, log: Logger,
        attackLog: RateLimitedLog
    ) {
        self.store = store
        self.identity = identity
        self.clock = clock
        self.log = log
        self.attackLog = attackLog
        self.noticeLog = RateLimitedLog(logger: log, level: .info, interval: .seconds(60))
    }

    // MARK: State

    /// The sync state, with what the store holds loaded on first use.
    private func loadedMachine() -> RoomSyncStateMachine {
        if !book.loaded {
            book.loaded = true
            do {
                var current: (RoomID, IdentityPublicKey)?
                var ranges = SequenceRanges()
                for row in try store.signedRoomMessageSequences() {
                    let (room, author) = (row.room, row.author)
                    if let c = current, c != (room, author) {
                        book.machine.load(room: c.0, author: c.1, ranges: ranges)
                        ranges = SequenceRanges()
                    }
                    current = (room, author)
                    ranges.insert(row.sequence)
                }
                if let c = current { book.machine.load(room: c.0, author: c.1, ranges: ranges) }
            } catch {
                log.error("could not load the signed room messages; sync starts empty", ["error": "\(error)"])
            }
        }
        return book.machine
    }

    /// Runs `body` on the machine and performs the actions it returns.
    func withSync(_ body: (inout RoomSyncStateMachine) -> [RoomSyncStateMachine.Action]) {
        var machine = loadedMachine()
        let actions = body(&machine)
        book.machine = machine
        perform(actions)
    }

    /// May `peer` have `author`'s message `sequence` of `room` (`RoomEntitlement`), judged
    /// on this node's resolved room and the message's signed anchor.
    func entitlement() -> RoomSyncStateMachine.Entitled {
        // One closure per batch of decisions: the room and the membership at each anchor are
        // computed once (a catch-up of thousands of messages names a handful of anchors).
        var rooms: [RoomID: (state: RoomState?, operations: [RoomOperationHash: RoomOperation])] = [:]
        var places: [[RoomOperationHash]: RoomEntitlement.Place?] = [:]
        return { [unowned self] room, author, sequence, peer in
            // This node's own messages are pushed like any other: its outbox holds them only
            // for the few members it sent them to itself (`RoomFanOut`); the others lack them
            // until a member (this one included) passes them on.
            if rooms[room] == nil { rooms[room] = try? self.host?.roomForSync(room) }
            guard let entry = rooms[room], let state = entry.state,
                let bytes = try? self.store.signedRoomMessages(room: room, author: author, sequences: [sequence]).first,
                let m = try? SignedRoomMessage.decode(bytes)
            else { return false }
            if places[m.anchor] == nil {
                places[m.anchor] = .some(
                    RoomEntitlement.place(at: m.anchor, state: state, operations: entry.operations))
            }
            return RoomEntitlement.verdict(
                author: author, sequence: sequence, place: places[m.anchor] ?? nil, for: peer, state: state)
                == .entitled
        }
    }

    // MARK: Members reach each other

    /// The joined members of each room this node has joined (its own view).
    func joinedRoomMembers() -> [Set<IdentityPublicKey>] {
        guard let rooms = try? store.rooms() else { return [] }
        return rooms.filter { $0.status == .joined }.map { Set($0.joined) }
    }

    /// Whether `identity` is a joined member of a room this node has joined.
    func isCoMember(_ identity: IdentityPublicKey) -> Bool {
        identity != me && joinedRoomMembers().contains { $0.contains(identity) }
    }

    // MARK: Who syncs

    /// Peers known to sync rooms (bit 3), in this run or an earlier one.
    func knownSyncingPeers() -> Set<IdentityPublicKey> {
        loadSyncingPeers()
        return book.syncing
    }

    /// Peers known to compare operation summaries (bit 5), in this run or an earlier one.
    func knownSummarizingPeers() -> Set<IdentityPublicKey> {
        loadSyncingPeers()
        return book.summarizing
    }

    func loadSyncingPeers() {
        guard !book.syncingLoaded else { return }
        book.syncingLoaded = true
        do {
            book.syncing.formUnion(try store.roomSyncPeers(.messages))
            book.summarizing.formUnion(try store.roomSyncPeers(.operations))
            book.capReaders.formUnion(try store.roomSyncPeers(.removalCaps))
        } catch {
            log.error(
                "could not read the peers that sync rooms; they get room messages directly", ["error": "\(error)"])
        }
    }

    /// `peer` announced (or no longer announces) `feature`: kept, in memory and in the store.
    func notePeer(_ peer: IdentityPublicKey, _ feature: RoomSyncFeature, syncing: Bool) {
        loadSyncingPeers()
        switch feature {
        case .messages:
            guard book.syncing.contains(peer) != syncing else { return }
            if syncing { book.syncing.insert(peer) } else { book.syncing.remove(peer) }
        case .operations:
            guard book.summarizing.contains(peer) != syncing else { return }
            if syncing { book.summarizing.insert(peer) } else { book.summarizing.remove(peer) }
        case .removalCaps:
            guard book.capReaders.contains(peer) != syncing else { return }
            if syncing { book.capReaders.insert(peer) } else { book.capReaders.remove(peer) }
        }
        do { try store.setRoomSyncPeer(peer, feature, syncing: syncing) } catch {
            log.warning(
                "could not keep whether a peer syncs rooms", ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }

    // MARK: Events

    /// A session is up: with a peer that syncs rooms, compare every room both have joined.
    func sessionStarted(_ link: Link, peer: IdentityPublicKey) {
        notePeer(peer, .operations, syncing: link.remoteFeatures.contains(.roomOperationSummaries))
        notePeer(peer, .removalCaps, syncing: link.remoteFeatures.contains(.removalCaps))
        guard link.remoteFeatures.contains(.roomSync) else {
            notePeer(peer, .messages, syncing: false)
            return
        }
        notePeer(peer, .messages, syncing: true)
        var shared: [RoomID] = []
        do {
            for r in try store.rooms() where r.status == .joined {
                guard let state = try host?.roomForSync(r.id).state,
                    state.hasJoined(me), state.hasJoined(peer)
                else { continue }
                shared.append(r.id)
            }
        } catch {
            log.error("could not list rooms for sync", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        withSync { $0.sessionOpened(peer, sharedRooms: shared, now: now) }
    }

    /// The session with `peer` ended: what was pushed on it and its summary bounds go.
    func sessionEnded(_ peer: IdentityPublicKey) {
        book.summaryReplies[peer] = nil
        book.summariesRead[peer] = nil
        guard book.loaded else { return }
        book.machine.sessionClosed(peer)
        book.pushed[peer] = nil
    }

    /// The room's membership changed: sync stops with members no longer joined at once.
    func membershipChanged(_ state: RoomState) {
        let now = clock.monotonicNow()
        let me = self.me
        withSync { $0.membershipChanged(room: state.roomID, joined: Set(state.joined), me: me, now: now) }
    }

    /// Announces and pushes what is due (`RoomSyncStateMachine.tick`).
    func tick() {
        guard book.loaded else { return }
        let now = clock.monotonicNow()
        let entitled = entitlement()
        withSync { $0.tick(now: now, entitled: entitled) }
    }

    /// Acknowledgements of signed messages this node sent (its own, or pushed).
    func acknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard book.loaded, var sent = book.pushed[peer], !sent.isEmpty else { return }
        var done: [(RoomID, IdentityPublicKey, UInt64)] = []
        for id in ids { if let s = sent.removeValue(forKey: id) { done.append(s) } }
        book.pushed[peer] = sent
        guard !done.isEmpty else { return }
        let entitled = entitlement()
        withSync { m in
            done.flatMap { m.acknowledged(room: $0.0, author: $0.1, sequence: $0.2, by: peer, entitled: entitled) }
        }
    }

    // MARK: Summaries

    /// A summary from the session's peer: push what it lacks and may have. What it lists of
    /// this node's own messages is held by it (delivery state: it may have them from another
    /// member), so they stop being queued for it.
    func receivedHave(_ have: RoomHave, from peer: IdentityPublicKey) {
        log.debug(
            "room summary received",
            ["room": have.roomID.hex, "from": peer.fingerprintText, "authors": "\(have.authors.count)"])
        if let mine = have.authors[me], !mine.ranges.isEmpty, store.roomOutboxesMayHaveWork {
            do {
                deliveryChanged(
                    try store.markRoomMessagesHeld(
                        room: have.roomID, author: me, ranges: mine.ranges, by: peer, at: nowMs))
            } catch {
                log.error("could not record what a member's summary holds", ["error": "\(error)"])
            }
        }
        let now = clock.monotonicNow()
        let entitled = entitlement()
        withSync { $0.haveReceived(have, from: peer, now: now, entitled: entitled) }
    }

    // MARK: Actions

    /// The one performer of `RoomSyncStateMachine.Action`.
    private func perform(_ actions: [RoomSyncStateMachine.Action]) {
        for action in actions {
            switch action {
            case let .sendHave(peer, have):
                guard let link = host?.activeConnection(for: peer), link.remoteFeatures.contains(.roomSync) else {
                    continue
                }
                link.send(.roomHave(have))
                // Operation summaries ride on message summaries: at session start, when a
                // member joins, and by anti-entropy (docs/PROTOCOL.md "Operation summaries").
                sendOperationsHave(room: have.roomID, on: link)
            case let .push(peer, room, author, sequences):
                guard let link = host?.activeConnection(for: peer), link.remoteFeatures.contains(.roomSync) else {
                    continue
                }
                let encoded: [[UInt8]]
                do {
                    encoded = try store.signedRoomMessages(room: room, author: author, sequences: sequences)
                } catch {
                    log.error("could not read signed room messages to pass on", ["error": "\(error)"])
                    continue
                }
                log.debug(
                    "passing room messages on",
                    [
                        "room": room.hex, "to": peer.fingerprintText, "author": author.fingerprintText,
                        "count": "\(encoded.count)"
                    ])
                for bytes in encoded {
                    guard let m = try? SignedRoomMessage.decode(bytes) else {
                        log.warning("stored signed room message does not verify; not passed on", ["room": room.hex])
                        continue
                    }
                    book.pushed[peer, default: [:]][m.id] = (m.roomID, m.author, m.roomSequence)
                    link.send(.roomMessage(.verified(m)))
                }
            case let .close(peer, reason):
                attackLog.log(
                    key: "room-forged-close:" + peer.hex, "closing a session that hands over forged room messages",
                    ["peer": peer.fingerprintText, "why": reason])
                host?.activeConnection(for: peer)?.close(reason: .protocolError, text: reason)
            }
        }
    }
}
