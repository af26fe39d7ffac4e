import Foundation
import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// Receives the journal's notifications live (a subscribed control connection).
protocol EventJournalSubscriber: AnyObject {
    /// `line` is the notification's JSON text (without the newline), encoded once for
    /// every subscriber. `peer` is the identity the event concerns (for filters); nil
    /// concerns everyone.
    func journal(_ journal: EventJournal, deliver line: [UInt8], peer: String?)
    /// Every line of one flush has been delivered: the subscriber writes them out now, in
    /// one socket write rather than one per line.
    func journalDeliveredBatch(_ journal: EventJournal)
}

extension EventJournalSubscriber {
    func journalDeliveredBatch(_ journal: EventJournal) {}
}

/// Every notification the control socket sends, numbered and kept in the store, so a client
/// can resume after the last `eventId` it saw (`messages.subscribe` with `since`).
///
/// The journal renders each node event once, appends it to the store and then hands it,
/// with its id, to every subscriber. Events of one event-loop tick are stored in one
/// transaction. Everything runs on the node's event loop, like the node itself; that
/// confinement is what makes `@unchecked Sendable` honest.
final class EventJournal: NodeObserver, InTransactionJournal, @unchecked Sendable {
    /// How much the journal keeps and when it prunes. `standard` is the daemon's; tests
    /// pass small ones to see pruning and paging without 100,000 events.
    struct Limits {
        /// Events kept at most: enough for a client that was away for a busy week, small
        /// enough (message events store only a row id) to stay a few megabytes.
        var maxKeptEvents = 100_000
        /// Events older than this are dropped even if fewer than `maxKeptEvents` exist: a
        /// client gone longer than a week should catch up with `messages.list` instead.
        var maxKeptAgeMilliseconds: Int64 = 7 * 24 * 3_600 * 1_000
        /// Prune after this many appended events: one DELETE per thousand events.
        var pruneEveryEvents = 1_000
        /// ...or after this long, so age-based pruning happens on a quiet node too.
        var pruneEveryMilliseconds: Int64 = 3_600 * 1_000
        /// Stored events rendered and written per replay step before waiting for the client
        /// to take them: bounds the memory one resuming client can make the daemon hold.
        var replayPageSize = 500

        static let standard = Limits()
    }

    let limits: Limits
    private let node: Node
    private var pending: [Rendered] = []
    private var flushScheduled = false
    private var subscribers: [ObjectIdentifier: WeakSubscriber] = [:]
    /// The newest stored event id (0: none).
    private(set) var lastEventID: Int64 = 0
    /// Every event up to this id is gone.
    private(set) var prunedThrough: Int64 = 0
    private var appendedSincePrune = 0
    private var lastPruneAt: Int64 = 0
    /// The notification line being handed to subscribers, reused for every line.
    private var lineBuffer: [UInt8] = []
    /// The last conversation an event concerned, with its hex (`subject(of:)`).
    private var lastSubject: (party: MessageParty, hex: String)?

    /// A node event as a notification, before it has an id. The params stay typed until
    /// the one encoding that gives every subscriber the same bytes.
    struct Rendered {
        var method: String
        var peer: String?
        var messageRowID: Int64?
        var params: Params
        /// Set when the event's row was written in its message's own transaction
        /// (`MessageJournal`); nil: the flush stores it.
        var eventID: Int64? = nil

        /// The params, and whether their line is written by hand (the per-message events),
        /// known where they are rendered: finding it out by a dynamic cast cost ~1,200
        /// instructions a line. One existential, not the same params twice: a message's
        /// params are a whole `MessageInfo`, boxed, copied and freed once per box (~600
        /// instructions an event, issue 32 part 11).
        enum Params {
            case encodable(any ControlEventParams)
            case handWritten(any ControlEventParamsWritable)

            var encodable: any ControlEventParams {
                switch self {
                case .encodable(let p): p
                case .handWritten(let p): p
                }
            }
        }

        init(method: String, peer: String?, messageRowID: Int64?, params: any ControlEventParams) {
            self.init(method: method, peer: peer, messageRowID: messageRowID, params: .encodable(params))
        }

        init(method: String, peer: String?, messageRowID: Int64?, params: Params, eventID: Int64? = nil) {
            self.method = method
            self.peer = peer
            self.messageRowID = messageRowID
            self.params = params
            self.eventID = eventID
        }
    }

    init(node: Node, limits: Limits = .standard) {
        self.node = node
        self.limits = limits
    }

    /// Loads the journal's bounds and prunes what is too old. On the node's loop.
    func start() {
        node.loop.preconditionInEventLoop()
        prune()
        do {
            (prunedThrough, lastEventID) = try node.store.eventBounds()
        } catch {
            node.log.error("cannot read the event journal; event ids start over", ["error": "\(error)"])
        }
    }

    func addSubscriber(_ s: EventJournalSubscriber) { subscribers[ObjectIdentifier(s)] = WeakSubscriber(s) }
    func removeSubscriber(_ s: EventJournalSubscriber) { subscribers[ObjectIdentifier(s)] = nil }

    // MARK: Recording

    func node(_ node: Node, didEmit event: NodeEvent) {
        guard let rendered = render(event) else { return }
        pending.append(rendered)
        guard !flushScheduled else { return }
        flushScheduled = true
        // Events emitted in the same tick (a batch of received messages) share one transaction.
        node.loop.assumeIsolated().execute { [weak self] in self?.flush() }
    }

    func settleBeforeMessageTransaction() {
        // Rows a message transaction writes take the next ids: what waits without an id
        // must be stored first, or a subscriber would see ids out of order.
        if pending.contains(where: { $0.eventID == nil }) { flush() }
    }

    private func flush() {
        flushScheduled = false
        var batch = pending
        pending.removeAll()
        guard !batch.isEmpty else { return }
        // Ids written by message transactions are lower than any the append below gives:
        // delivered first, so a subscriber always sees ids ascending (its resume point).
        // Only an event emitted between a message's commit and its own event is moved.
        if batch.contains(where: { $0.eventID == nil }) && batch.contains(where: { $0.eventID != nil }) {
            batch = batch.filter { $0.eventID != nil } + batch.filter { $0.eventID == nil }
        }
        let now = Node.nowMs()
        var ids: [Int64?] = batch.map(\.eventID)
        let unstored = batch.indices.filter { batch[$0].eventID == nil }
        if let last = ids.compactMap({ $0 }).max() { lastEventID = max(lastEventID, last) }
        if !unstored.isEmpty {
            do {
                let stored = try unstored.map { k in
                    let e = batch[k]
                    let params: any ControlEventParams = e.params.encodable
                    return NewJournalEvent(
                        at: now, method: e.method, peer: e.peer, messageRowID: e.messageRowID,
                        params: e.messageRowID == nil ? try CanonicalJSON.encode(params) : nil)
                }
                let assigned = try node.store.appendEvents(stored)
                for (k, id) in zip(unstored, assigned) { ids[k] = id }
                if let last = assigned.last { lastEventID = max(lastEventID, last) }
            } catch {
                // Still delivered live, without an id: a resuming client cannot ask for them.
                node.log.error("could not store events; they are sent without an eventId", ["error": "\(error)"])
            }
        }
        let targets = subscribers.values.compactMap(\.value)
        if !targets.isEmpty {
            // By index: each event read in place, not copied out of the batch for the loop.
            for k in batch.indices {
                let id = ids[k]
                // Every line of the flush is written into the same buffer, whose capacity stays
                // from line to line and flush to flush (a subscriber copies what it is given).
                lineBuffer.removeAll(keepingCapacity: true)
                switch batch[k].params {
                case .handWritten(let params):
                    ControlEventLine.write(
                        method: batch[k].method, params: params, eventID: id.map { Int($0) },
                        appendingTo: &lineBuffer)
                case .encodable(let params):
                    guard Self.write(method: batch[k].method, params: params, eventID: id, appendingTo: &lineBuffer)
                    else { continue }
                }
                for t in targets { t.journal(self, deliver: lineBuffer, peer: batch[k].peer) }
            }
            for t in targets { t.journalDeliveredBatch(self) }
        }
        appendedSincePrune += batch.count
        if appendedSincePrune >= limits.pruneEveryEvents || now - lastPruneAt >= limits.pruneEveryMilliseconds {
            prune()
        }
    }

    /// One notification's JSON text: the event's params with its `eventId` added.
    static func line<P: Encodable>(method: String, params: P, eventID: Int64?) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        return write(method: method, params: params, eventID: eventID, appendingTo: &out) ? out : nil
    }

    /// `line`, appended to a buffer the caller reuses; false (and `out` unchanged) if the
    /// params cannot be encoded.
    static func write<P: Encodable>(method: String, params: P, eventID: Int64?, appendingTo out: inout [UInt8])
        -> Bool
    {
        // The per-message events are written by hand (same bytes, a fraction of the cost).
        if let writable = params as? any ControlEventParamsWritable {
            ControlEventLine.write(
                method: method, params: writable, eventID: eventID.map { Int($0) }, appendingTo: &out)
            return true
        }
        return
            (try? CanonicalJSON.encode(
                JournalNotification(method: method, params: params, eventID: eventID.map { Int($0) }),
                appendingTo: &out)) != nil
    }

    private func prune() {
        let now = Node.nowMs()
        appendedSincePrune = 0
        lastPruneAt = now
        do {
            prunedThrough = try node.store.pruneEvents(
                keepLast: limits.maxKeptEvents,
                notBefore: now - limits.maxKeptAgeMilliseconds)
        } catch {
            node.log.error("could not prune the event journal", ["error": "\(error)"])
        }
    }

    // MARK: Rendering

    private func render(_ event: NodeEvent) -> Rendered? {
        switch event {
        case .messageReceived(let m):
            // `messageParams` for this method, typed (`handWritten`); a room message
            // concerns its room, as in `messageEvent`.
            let params = MessageReceivedEvent(message: node.messageInfo(m, justStored: true))
            return Rendered(
                method: ControlEvent.messageReceived, peer: subject(of: m.conversation), messageRowID: m.rowID,
                params: .handWritten(params), eventID: m.journalEventID)
        case .messageDelivered(let d):
            // From the mark itself: the message was not read back (its replay is rendered
            // from the stored row by `messageParams`, with the same fields).
            let params = MessageDeliveredEvent(
                id: d.id.hex, to: Node.fingerprint(of: d.recipient), deliveredAt: Int(d.deliveredAt))
            return Rendered(
                method: ControlEvent.messageDelivered, peer: subject(of: d.conversation), messageRowID: d.rowID,
                params: .handWritten(params), eventID: d.journalEventID)
        case .messageRead(let m):
            return messageEvent(ControlEvent.messageRead, m)
        case .messageRefused(let m, _):
            return messageEvent(ControlEvent.messageRefused, m)
        case .messageUpdated(let m):
            return messageEvent(ControlEvent.messageUpdated, m)
        case let .peerStatus(identity, status):
            return Rendered(
                method: ControlEvent.peerStatus, peer: identity.hex, messageRowID: nil,
                params: PeerStatusEvent(
                    fingerprint: Node.fingerprint(of: identity),
                    name: node.displayName(of: identity), status: status))
        case .peerOnline(let id), .peerOffline(let id):
            guard let rec = try? node.store.peer(identity: id) else { return nil }
            let id = id.hex
            let info = node.peerInfo(rec)
            if case .peerOnline = event {
                return Rendered(
                    method: ControlEvent.peerOnline, peer: id, messageRowID: nil, params: PeerOnlineEvent(peer: info))
            }
            return Rendered(
                method: ControlEvent.peerOffline, peer: id, messageRowID: nil, params: PeerOfflineEvent(peer: info))
        case let .newPeer(rec, address):
            let e = PeerNewEvent(
                name: node.displayName(of: rec.identity), fingerprint: Node.fingerprint(of: rec.identity),
                trust: ControlViews.trust(rec.trust), address: address,
                safetyNumber: node.safetyNumber(with: rec.identity), nameClash: node.nameClashInfo(rec.identity))
            return Rendered(method: ControlEvent.peerNew, peer: rec.identity.hex, messageRowID: nil, params: e)
        case .roomUpdated(let room):
            // Filtered by room id: `messages.subscribe` with "#room" follows the room.
            return Rendered(
                method: ControlEvent.roomUpdated, peer: room.id.hex, messageRowID: nil,
                params: RoomUpdatedEvent(room: node.roomInfo(room)))
        case let .file(rec, kind, rate):
            let info = node.fileInfo(rec, rate: rate)
            let params: any ControlEventParams
            switch kind {
            case .offered: params = FileOfferedEvent(transfer: info)
            case .progress: params = FileProgressEvent(transfer: info)
            case .completed: params = FileCompletedEvent(transfer: info)
            case .failed: params = FileFailedEvent(transfer: info)
            case .cancelled: params = FileCancelledEvent(transfer: info)
            }
            // Filtered like messages: by the peer, or by the room a room file was sent to.
            return Rendered(
                method: type(of: params).method, peer: rec.room?.hex ?? rec.peer.hex, messageRowID: nil, params: params)
        }
    }

    /// A conversation as the events' subject (its hex, what subscribers filter on). A
    /// batch of messages is nearly always one conversation's: the last one's hex is kept
    /// rather than converted again for every event (~800 instructions, issue 32 part 11).
    private func subject(of party: MessageParty) -> String {
        if let last = lastSubject, last.party == party { return last.hex }
        let hex = party.hex
        lastSubject = (party, hex)
        return hex
    }

    private func messageEvent(_ method: String, _ m: StoredMessage, justStored: Bool = false) -> Rendered? {
        guard let params = messageParams(method, m, justStored: justStored) else { return nil }
        // A room message concerns its room (what "#room" filters on), not the direct
        // conversation with its author.
        return Rendered(method: method, peer: subject(of: m.conversation), messageRowID: m.rowID, params: params)
    }

    /// The params of a message event, from the message as stored: the same for a live
    /// event and its replay (except what changed since, e.g. `readAt` or reactions).
    private func messageParams(_ method: String, _ m: StoredMessage, justStored: Bool = false)
        -> (any ControlEventParams)?
    {
        switch method {
        case ControlEvent.messageReceived:
            return MessageReceivedEvent(message: node.messageInfo(m, justStored: justStored))
        case ControlEvent.messageDelivered:
            return MessageDeliveredEvent(
                id: m.id.hex, to: Node.fingerprint(of: m.recipient), deliveredAt: Int(m.deliveredAt ?? 0))
        case ControlEvent.messageRead:
            return MessageReadEvent(id: m.id.hex, to: Node.fingerprint(of: m.recipient), readAt: Int(m.readAt ?? 0))
        case ControlEvent.messageRefused:
            // From the store, so a replay shows the refusal as recorded.
            guard let r = try? node.store.refusal(ofMessageRow: m.rowID) else { return nil }
            let reason = RefusalReason(rawValue: UInt8(clamping: r.reason)) ?? .unknown
            return MessageRefusedEvent(
                id: m.id.hex, to: Node.fingerprint(of: m.recipient), reason: "\(reason)",
                text: reason.description, refusedAt: Int(r.at))
        case ControlEvent.messageUpdated:
            // Rendered from the message as it is now: a replayed edit event after a delete
            // shows the tombstone, never the erased text.
            return MessageUpdatedEvent(message: node.messageInfo(m))
        default:
            return nil
        }
    }

    // MARK: Resuming

    /// Why a subscription cannot resume after `since`, or nil if it can.
    func resumeProblem(since: Int) -> JSONRPCError? {
        if Int64(since) > lastEventID {
            return .invalidParams(
                "\"since\" (\(since)) is newer than the newest event (\(lastEventID)): "
                    + "the id comes from another daemon or a reset store; subscribe without \"since\"")
        }
        if Int64(since) < prunedThrough {
            return .eventsExpired(since: since, prunedThrough: Int(prunedThrough), lastEventId: Int(lastEventID))
        }
        return nil
    }

    /// One replay step: stored events with `after < id <= through`, rendered as they were
    /// notified, at most `replayPageSize`. `scannedThrough` is where the next step starts
    /// (events whose message no longer exists are skipped).
    func replay(after: Int64, through: Int64) throws(StoreError)
        -> (items: [(line: [UInt8], peer: String?)], scannedThrough: Int64)
    {
        let events = try node.store.events(after: after, through: through, limit: limits.replayPageSize)
        let rows = try node.store.messages(rowIDs: events.compactMap(\.event.messageRowID))
        var items: [(line: [UInt8], peer: String?)] = []
        for stored in events {
            let e = stored.event
            let line: [UInt8]?
            if let row = e.messageRowID {
                guard let m = rows[row], let p = messageParams(e.method, m) else { continue }
                line = Self.line(method: e.method, params: p, eventID: stored.id)
            } else {
                guard let bytes = e.params, var members = (try? JSONValue(parsing: bytes))?.objectValue else {
                    continue
                }
                // Added to the tree here, not by `ParamsWithEventID`: a stored tree is
                // encoded as one value, and a keyed container must not follow it.
                members[ControlEvent.eventIDKey] = .int(Int(stored.id))
                line = Self.line(method: e.method, params: JSONValue.object(members), eventID: nil)
            }
            if let line { items.append((line, e.peer)) }
        }
        return (items, events.last?.id ?? through)
    }
}

/// `{"jsonrpc":"2.0","method":...,"params":{...,"eventId":N}}` from typed params, in one
/// encoding (the params' members and `eventId` land in the same object).
private struct JournalNotification<Params: Encodable>: Encodable {
    let method: String
    let params: Params
    let eventID: Int?

    private enum CodingKeys: String, CodingKey { case jsonrpc, method, params }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(JSONRPCVersion.string, forKey: .jsonrpc)
        try c.encode(method, forKey: .method)
        try c.encode(ParamsWithEventID(params: params, eventID: eventID), forKey: .params)
    }
}

private struct ParamsWithEventID<Params: Encodable>: Encodable {
    let params: Params
    let eventID: Int?

    private struct EventIDKey: CodingKey {
        var stringValue: String { ControlEvent.eventIDKey }
        var intValue: Int? { nil }
        init() {}
        init?(stringValue: String) { return nil }
        init?(intValue: Int) { return nil }
    }

    func encode(to encoder: Encoder) throws {
        try params.encode(to: encoder)
        guard let eventID else { return }
        var c = encoder.container(keyedBy: EventIDKey.self)
        try c.encode(eventID, forKey: EventIDKey())
    }
}

private struct WeakSubscriber {
    weak var value: EventJournalSubscriber?
    init(_ v: EventJournalSubscriber) { value = v }
}
