import Foundation
import NIOCore
import ParleyControlProtocol
import ParleyStore

/// Receives the journal's notifications live (a subscribed control connection).
protocol EventJournalSubscriber: AnyObject {
    /// `peer` is the identity the event concerns (for filters); nil concerns everyone.
    func journal(_ journal: EventJournal, deliver notification: JSONRPCNotification, peer: String?)
}

/// Every notification the control socket sends, numbered and kept in the store, so a client
/// can resume after the last `eventId` it saw (`messages.subscribe` with `since`).
///
/// The journal renders each node event once, appends it to the store and then hands it,
/// with its id, to every subscriber. Events of one event-loop tick are stored in one
/// transaction. Everything runs on the node's event loop, like the node itself; that
/// confinement is what makes `@unchecked Sendable` honest.
final class EventJournal: NodeObserver, @unchecked Sendable {
    /// Events kept at most: enough for a client that was away for a busy week, small
    /// enough (message events store only a row id) to stay a few megabytes.
    static let maxKeptEvents = 100_000
    /// Events older than this are dropped even if fewer than `maxKeptEvents` exist: a
    /// client gone longer than a week should catch up with `messages.list` instead.
    static let maxKeptAgeMilliseconds: Int64 = 7 * 24 * 3_600 * 1_000
    /// Prune after this many appended events: one DELETE per thousand events.
    static let pruneEveryEvents = 1_000
    /// ...or after this long, so age-based pruning happens on a quiet node too.
    static let pruneEveryMilliseconds: Int64 = 3_600 * 1_000
    /// Stored events rendered and written per replay step before waiting for the client
    /// to take them: bounds the memory one resuming client can make the daemon hold.
    static let replayPageSize = 500

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

    /// A node event as a notification, before it has an id.
    struct Rendered {
        var method: String
        var peer: String?
        var messageRowID: Int64?
        var params: [String: JSONValue]
    }

    init(node: Node) {
        self.node = node
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

    private func flush() {
        flushScheduled = false
        let batch = pending
        pending.removeAll()
        guard !batch.isEmpty else { return }
        let now = Node.nowMs()
        var ids: [Int64?] = Array(repeating: nil, count: batch.count)
        do {
            let stored = try batch.map { e in
                NewJournalEvent(at: now, method: e.method, peer: e.peer, messageRowID: e.messageRowID,
                                params: e.messageRowID == nil ? try Self.encode(e.params) : nil)
            }
            let assigned = try node.store.appendEvents(stored)
            ids = assigned.map { Optional($0) }
            if let last = assigned.last { lastEventID = last }
        } catch {
            // Still delivered live, without an id: a resuming client cannot ask for them.
            node.log.error("could not store events; they are sent without an eventId", ["error": "\(error)"])
        }
        let targets = subscribers.values.compactMap(\.value)
        for (e, id) in zip(batch, ids) {
            var params = e.params
            if let id { params[ControlEvent.eventIDKey] = .int(Int(id)) }
            let notification = JSONRPCNotification(method: e.method, params: params)
            for t in targets { t.journal(self, deliver: notification, peer: e.peer) }
        }
        appendedSincePrune += batch.count
        if appendedSincePrune >= Self.pruneEveryEvents || now - lastPruneAt >= Self.pruneEveryMilliseconds { prune() }
    }

    private func prune() {
        let now = Node.nowMs()
        appendedSincePrune = 0
        lastPruneAt = now
        do {
            prunedThrough = try node.store.pruneEvents(keepLast: Self.maxKeptEvents,
                                                       notBefore: now - Self.maxKeptAgeMilliseconds)
        } catch {
            node.log.error("could not prune the event journal", ["error": "\(error)"])
        }
    }

    static func encode(_ params: [String: JSONValue]) throws -> [UInt8] {
        Array(try ControlJSON.encoder().encode(JSONValue.object(params)))
    }

    // MARK: Rendering

    private func render(_ event: NodeEvent) -> Rendered? {
        switch event {
        case .messageReceived(let m):
            return messageEvent(ControlEvent.messageReceived, m)
        case .messageDelivered(let m):
            return messageEvent(ControlEvent.messageDelivered, m)
        case .messageRead(let m):
            return messageEvent(ControlEvent.messageRead, m)
        case .peerOnline(let id), .peerOffline(let id):
            guard let rec = try? node.store.peer(identity: id) else { return nil }
            let info = node.peerInfo(rec)
            let params: JSONValue?
            if case .peerOnline = event {
                params = try? JSONValue(encoding: PeerOnlineEvent(peer: info))
            } else {
                params = try? JSONValue(encoding: PeerOfflineEvent(peer: info))
            }
            guard let members = params?.objectValue else { return nil }
            return Rendered(method: event.isOnline ? ControlEvent.peerOnline : ControlEvent.peerOffline,
                            peer: id, messageRowID: nil, params: members)
        case .keyChanged(let change):
            let e = PeerKeyChangedEvent(
                name: change.displayName, oldFingerprint: Node.fingerprint(ofHex: change.oldIdentity),
                newFingerprint: Node.fingerprint(ofHex: change.newIdentity), address: change.address,
                safetyNumber: node.safetyNumber(with: change.newIdentity))
            guard let members = (try? JSONValue(encoding: e))?.objectValue else { return nil }
            // Concerns everyone: a subscriber filtering on the old peer must hear of it too.
            return Rendered(method: ControlEvent.peerKeyChanged, peer: nil, messageRowID: nil, params: members)
        case .roomUpdated(let room):
            guard let members = (try? JSONValue(encoding: RoomUpdatedEvent(room: node.roomInfo(room))))?.objectValue else {
                return nil
            }
            // Filtered by room id: `messages.subscribe` with "#room" follows the room.
            return Rendered(method: ControlEvent.roomUpdated, peer: room.id, messageRowID: nil, params: members)
        }
    }

    private func messageEvent(_ method: String, _ m: StoredMessage) -> Rendered? {
        guard let params = messageParams(method, m) else { return nil }
        // A room message concerns its room (what "#room" filters on), not the direct
        // conversation with its author.
        return Rendered(method: method, peer: m.room ?? m.peer, messageRowID: m.rowID, params: params)
    }

    /// The params of a message event, from the message as stored: the same for a live
    /// event and its replay (except what changed since, e.g. `readAt`).
    private func messageParams(_ method: String, _ m: StoredMessage) -> [String: JSONValue]? {
        let value: JSONValue?
        switch method {
        case ControlEvent.messageReceived:
            value = try? JSONValue(encoding: MessageReceivedEvent(message: node.messageInfo(m)))
        case ControlEvent.messageDelivered:
            value = try? JSONValue(encoding: MessageDeliveredEvent(
                id: m.id, to: Node.fingerprint(ofHex: m.recipient), deliveredAt: Int(m.deliveredAt ?? 0)))
        case ControlEvent.messageRead:
            value = try? JSONValue(encoding: MessageReadEvent(
                id: m.id, to: Node.fingerprint(ofHex: m.recipient), readAt: Int(m.readAt ?? 0)))
        default:
            value = nil
        }
        return value?.objectValue
    }

    // MARK: Resuming

    /// Why a subscription cannot resume after `since`, or nil if it can.
    func resumeProblem(since: Int) -> JSONRPCError? {
        if Int64(since) > lastEventID {
            return .invalidParams("\"since\" (\(since)) is newer than the newest event (\(lastEventID)): "
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
        -> (items: [(notification: JSONRPCNotification, peer: String?)], scannedThrough: Int64)
    {
        let events = try node.store.events(after: after, through: through, limit: Self.replayPageSize)
        let rows = try node.store.messages(rowIDs: events.compactMap(\.event.messageRowID))
        var items: [(notification: JSONRPCNotification, peer: String?)] = []
        for stored in events {
            let e = stored.event
            var params: [String: JSONValue]
            if let row = e.messageRowID {
                guard let m = rows[row], let p = messageParams(e.method, m) else { continue }
                params = p
            } else {
                guard let bytes = e.params,
                      let value = try? ControlJSON.decoder().decode(JSONValue.self, from: Data(bytes)),
                      let p = value.objectValue else { continue }
                params = p
            }
            params[ControlEvent.eventIDKey] = .int(Int(stored.id))
            items.append((JSONRPCNotification(method: e.method, params: params), e.peer))
        }
        return (items, events.last?.id ?? through)
    }
}

private struct WeakSubscriber {
    weak var value: EventJournalSubscriber?
    init(_ v: EventJournalSubscriber) { value = v }
}

private extension NodeEvent {
    var isOnline: Bool {
        if case .peerOnline = self { return true }
        return false
    }
}
