import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// One session's connection as the one-to-one message path uses it: `PeerConnection` in
/// the daemon, a link that records what it was given in the driver's tests.
protocol MessageLink: AnyObject {
    var isWritable: Bool { get }
    var remoteFeatures: ProtocolFeatures { get }
    var remoteIdentityKey: IdentityPublicKey? { get }
    func send(_ record: AppRecord)
    /// Writes what `send` queued now instead of at the end of the event-loop turn.
    func flushNow()
    func close(reason: CloseReason, text: String)
}

extension PeerConnection: MessageLink {}

extension MessageLink {
    /// A link that writes as it is given records (the other drivers' test links) has
    /// nothing to flush.
    func flushNow() {}

    /// Acknowledges stored records, at most `WireLimits.maxAcksPerRecord` ids per ack record.
    func sendAcks(_ ids: [MessageID]) {
        var start = 0
        while start < ids.count {
            let end = min(start + WireLimits.maxAcksPerRecord, ids.count)
            send(.ack(Array(ids[start..<end])))
            start = end
        }
    }
}

/// What the one-to-one message path needs from the rest of the node: narrow questions
/// about sessions, and the other lanes' steps it must call in order on the same session.
/// `Node` is the host (Node+Outbox.swift); a test stands in for it.
protocol DirectMessageHost: AnyObject {
    associatedtype Link: MessageLink

    // Sessions (`SessionDriver`).
    /// The peer of `link` if `link` carries its session (records on any other are ignored).
    func activePeer(of link: Link) -> IdentityPublicKey?
    func activeConnection(for peer: IdentityPublicKey) -> Link?
    /// Runs `body` on the send window of `link`'s session (`NodeLink.window`); nil if
    /// there is none. `body` must not send: a write can call back into the node.
    func withWindow<R>(of link: Link, _ body: (inout SendWindow) -> R) -> R?
    /// A message was exchanged with `peer`: not a stranger any more (eviction order).
    func promote(_ peer: IdentityPublicKey)

    // The other lanes of the same session, in the pump's order: room operations before
    // the direct messages, actions after them (they may name them), room messages last.
    func pumpRoomOperations(_ link: Link, peer: IdentityPublicKey)
    func pumpActions(_ link: Link, peer: IdentityPublicKey)
    func pumpRoomMessages(_ link: Link, peer: IdentityPublicKey)
    /// An acknowledgement's parts for the other lanes (ids the window knew as theirs, and
    /// ids it did not know at all: sent on an earlier session).
    func actionsAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey)
    func roomTrafficAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey)
    func roomSyncAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey)

    // The receive quota (Node+Quota.swift). Throws when the store cannot count what the
    // sender has stored: then nothing is taken (a failed count is not "nothing stored").
    func judgeByQuota(_ chats: [ChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [ChatRecord], refused: [(RefusalReason, [MessageID])])
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: Link)
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey)

    /// The user wrote to `peer`: it may be a contact now (gossip, `GossipDriver.wroteTo`).
    func wroteTo(_ peer: IdentityPublicKey)
    /// Tells the observers (the control side).
    func emit(_ e: NodeEvent)
    /// The journal rows a message transaction should write for `method` events, or nil.
    func messageJournal(_ method: String) -> MessageJournal?
}

/// Why the driver closes a session: the peer sees the text in the close record.
enum DirectMessageDriverCloseText {
    /// Incoming chats could not be judged or stored: the sender's messages stay queued
    /// there and are sent again at the next session.
    static let receiverStorageFailure = "receiver storage failure"
}

/// When an acknowledged message's delivery mark is written (issue 32 part 10).
enum DeliveryMarkFold {
    /// How long a mark waits for the message path's next transaction (a send, a message
    /// received) to ride on before it is written alone. Its `message.delivered` waits as
    /// long when nothing else is written: far below what a person notices (~100 ms), and
    /// a send's answer never waits for it. Long enough for a client that sends one message
    /// at a time to send its next one within it even on a loaded machine (5 ms was often
    /// too short under a profiler): then the mark rides on that transaction, ~28,000
    /// instructions less than a transaction of its own (docs/BENCHMARKS.md, part 10).
    static let flushDelay: TimeAmount = .milliseconds(20)
    /// Acknowledged ids that may wait at most: past it they are written at once. Bounds
    /// the memory a peer sending many acks in one window can hold (four full ack records).
    static let maxPendingIDs = 4 * WireLimits.maxAcksPerRecord
}

/// The one-to-one message path, from a local send to the peer's acknowledgement
/// (docs/ARCHITECTURE.md, "One message through the code"; docs/PROTOCOL.md, "Messages"
/// and "Acknowledgements"):
///
/// - `send`: `SendAdmission` decides what may be queued; the admitted ones are stored in
///   one transaction (`MessageStore.enqueue`) and pumped.
/// - `pump`: what is queued for a session's peer goes out within its `SendWindow`, between
///   the room operations and the actions and room messages (`DirectMessageHost`).
/// - `received`: the receive quota first, then `storeIncoming`, then the acknowledgement
///   once the store says the rows are on disk; never before.
/// - `acknowledged`: the window frees the slots, the deliveries are queued to be marked
///   (`DeliveryMarkFold`: they ride on the next `send` or `received` transaction, or are
///   written alone after `DeliveryMarkFold.flushDelay`), the other lanes take their part of
///   the ack, and the session is pumped again. `message.delivered` is sent once a mark is
///   committed, never before: a crash before that loses the mark and nothing else (the
///   message is sent again and de-duplicated by the peer, docs/CONTROL.md).
///
/// It owns the outbox's counts (`OutboxLedger`: the admission's bound and the pump's "may
/// have unsent" hint, so a caught-up session's new messages are sent as stored, not read
/// back). What is in flight is the session's (`NodeLink.window`); the messages themselves
/// are the store's. Its state lives on the node's event loop (the loop is its lock).
final class DirectMessageDriver<Host: DirectMessageHost> {
    typealias Link = Host.Link

    /// Only the message concern of the store.
    let store: any MessageStore
    private let loop: EventLoop
    private let clock: any NodeClock
    private let log: Logger
    /// This node's identity: the sender of what it queues, the recipient of what it stores.
    private let me: IdentityPublicKey
    /// The node (set once it is built; it owns this driver).
    unowned var host: Host?
    /// Queued messages per peer, for send admission and the pump.
    private(set) var ledger = OutboxLedger()
    /// What may be queued (its limits: `WireLimits.maxBodyBytes`, `NodeLimits.maxQueuedPerPeer`).
    private let admission: SendAdmission<NodeError>
    /// Writes the queued delivery marks alone if no transaction carried them in time. Armed
    /// while marks wait, never cancelled (a cancel cost ~6,000 instructions a message one
    /// in flight): when it fires with younger marks waiting it is armed again for them.
    private var markFlush: Scheduled<Void>?
    /// When the oldest waiting delivery mark was queued; nil when none waits.
    private var marksWaitingSince: MonotonicInstant?

    init(
        store: any MessageStore, me: IdentityPublicKey, loop: EventLoop, clock: any NodeClock, log: Logger,
        admission: SendAdmission<NodeError> = SendAdmission()
    ) {
        self.store = store
        self.admission = admission
        self.me = me
        self.loop = loop
        self.clock = clock
        self.log = log
    }

    /// Queued messages were moved or deleted by the user: the per-peer counts are read again.
    func outboxChanged() { ledger.forgetAll() }

    // MARK: Local sends

    /// Queues several messages in ONE transaction (one fsync): a pipelining client's
    /// requests from one read are committed together, and each is answered only after
    /// that commit. Invalid ones fail alone (`SendAdmission`); a storage failure fails all
    /// of them, and so does a queue the store cannot count (`NodeError.outboxUncounted`).
    func send(_ items: [(PeerRecord, String)], replyTo: MessageID? = nil) -> [Result<StoredMessage, NodeError>] {
        loop.preconditionInEventLoop()
        if ledger.needsCounts {
            // The per-peer bound is checked on the stored queue: a count nobody could make
            // admits nothing (it is not "nothing queued").
            do { ledger.loadCounts(try store.pendingRecipients()) } catch {
                log.error("could not count the queued messages; nothing is queued now", ["error": "\(error)"])
                return items.map { _ in .failure(.outboxUncounted(error)) }
            }
        }
        let decision = admission.judge(
            items.map {
                SendAdmission<NodeError>.Item(
                    peer: $0.0.identity, bodyBytes: $0.1.utf8.count, refusal: $0.0.sendRefusal)
            },
            ledger: ledger)
        var results = [Result<StoredMessage, NodeError>?](repeating: nil, count: items.count)
        var batch: [NewOutgoingMessage] = []
        var batchIndex: [Int] = []
        let now = clock.wallMilliseconds()
        for (i, verdict) in decision.verdicts.enumerated() {
            let (peer, body) = items[i]
            switch verdict {
            case .admitted:
                batch.append(
                    NewOutgoingMessage(
                        id: MessageID.random(), recipient: peer.identity, body: body, createdAt: now,
                        replyTo: replyTo))
                batchIndex.append(i)
            case .emptyBody: results[i] = .failure(.emptyBody)
            case .bodyTooLarge(let size): results[i] = .failure(.bodyTooLarge(size))
            case .refused(let refusal): results[i] = .failure(refusal)
            case .queueFull(let limit): results[i] = .failure(.queueFull(peer, limit))
            }
        }
        if !batch.isEmpty {
            let host = self.host
            let planned = decision.admittedPerPeer
            // Sessions that had sent everything queued to their peer: after this batch, its
            // rows are all that peer's unsent messages, so the pump takes them as stored
            // instead of reading them back (`OutboxLedger.mayHaveUnsent`).
            var caughtUp: Set<IdentityPublicKey> = []
            for peer in planned.keys {
                if let host, let link = host.activeConnection(for: peer),
                    let sentThrough = host.withWindow(of: link, { $0.directSentThrough }),
                    !ledger.mayHaveUnsent(for: peer, sentThrough: sentThrough)
                {
                    caughtUp.insert(peer)
                }
            }
            prepareToCarryDeliveryMarks()
            do {
                // The sender's own sync is asked for once the records are written to their
                // sessions (`Store.holdingSyncRequests`): it is not on their way to the peer.
                try store.holdingSyncRequests { () throws(StoreError) in
                    let stored = try store.enqueue(batch, sender: me)
                    let delivered = deliveryMarksCarried()
                    for (k, m) in stored.enumerated() where k < batchIndex.count {
                        results[batchIndex[k]] = .success(m)
                    }
                    var newest: [IdentityPublicKey: Int64] = [:]
                    for m in stored {
                        if let key = m.recipient.peerKey {
                            newest[key] = max(newest[key] ?? m.sequence, m.sequence)
                        }
                    }
                    for (peer, n) in planned {
                        ledger.queued(n, for: peer, newestSequence: newest[peer] ?? 0)
                    }
                    // Written to for the first time: a contact now (gossip starts on the session).
                    for peer in planned.keys { host?.wroteTo(peer) }
                    let byRecipient =
                        caughtUp.isEmpty ? [:] : Dictionary(grouping: stored, by: \StoredMessage.recipient)
                    for peer in planned.keys {
                        guard let link = host?.activeConnection(for: peer) else { continue }
                        pump(link, justQueued: caughtUp.contains(peer) ? byRecipient[.peer(peer)] ?? [] : nil)
                        link.flushNow()
                    }
                    pumpSessions(of: delivered.subtracting(planned.keys))
                }
            } catch {
                _ = deliveryMarksCarried()
                for i in batchIndex { results[i] = .failure(.storage(error)) }
            }
        }
        return results.map { $0 ?? .failure(.storage(.io(path: store.path, reason: "not stored"))) }
    }

    // MARK: Pumping

    /// Sends what is queued for the peer of `link`, within its window: room membership
    /// first, direct messages, then room messages (an operation that makes us a member
    /// reaches the peer before our first message to the room); actions after the direct
    /// messages they may name. `justQueued`: every direct message to this peer the session
    /// has not sent yet, as just stored (oldest first), when the caller knows them all;
    /// then they are not read back from the store.
    func pump(_ link: Link, justQueued: [StoredMessage]? = nil) {
        guard let host, link.isWritable, let peer = host.activePeer(of: link) else { return }
        // The room outboxes are skipped while the store knows them to be empty.
        let roomWork = store.roomOutboxesMayHaveWork
        if roomWork { host.pumpRoomOperations(link, peer: peer) }
        defer { if roomWork { host.pumpRoomMessages(link, peer: peer) } }
        // Edits, deletes and reactions after the direct messages they may name.
        defer { host.pumpActions(link, peer: peer) }
        guard let window = host.withWindow(of: link, { (freeSlots: $0.freeSlots, sentThrough: $0.directSentThrough) }),
            window.freeSlots > 0, ledger.mayHaveUnsent(for: peer, sentThrough: window.sentThrough)
        else { return }
        let (freeSlots, sentThrough) = window
        var pending: [StoredMessage] = []
        if let justQueued {
            for m in justQueued where m.sequence > sentThrough {
                guard pending.count < freeSlots else { break }
                pending.append(m)
            }
        } else {
            do {
                pending = try store.pendingOutgoing(to: peer, afterSequence: sentThrough, limit: freeSlots)
            } catch {
                log.error("could not read the outbox", ["error": "\(error)"])
                return
            }
        }
        let now = clock.monotonicNow()
        for m in pending {
            let id = m.id
            guard
                host.withWindow(
                    of: link,
                    { $0.admit(id, bytes: m.body.utf8.count, lane: .direct, sequence: m.sequence, now: now) })
                    == true
            else {
                if host.withWindow(of: link, { $0.freeSlots }) == 0 { break }
                continue
            }
            // A peer that predates replies gets the reply as a plain chat (it would skip 0x09).
            let replyTo = link.remoteFeatures.contains(.conversation) ? m.replyTo : nil
            link.send(
                .chat(
                    ChatRecord(
                        id: id, sequence: UInt64(max(0, m.sequence)),
                        createdAt: UInt64(max(0, m.createdAt)), body: m.body, replyTo: replyTo)))
        }
    }

    // MARK: The wire

    /// Chats from the peer of `link`: judged by the receive quota (what is over it is
    /// refused, not stored, and stays queued at the sender), stored, then acknowledged
    /// once on disk.
    func received(_ arrived: [ChatRecord], on link: Link) {
        guard let host, let sender = host.activePeer(of: link) else { return }
        let now = clock.wallMilliseconds()
        // The receive quota and the disk floor first: what is over them is refused, not
        // stored (the sender keeps it queued).
        let chats: [ChatRecord]
        do {
            let refused: [(RefusalReason, [MessageID])]
            (chats, refused) = try host.judgeByQuota(arrived, from: sender)
            host.sendRefusals(refused, on: link)
        } catch {
            // Not measurable: none is stored or acknowledged; they stay queued at the sender.
            link.close(reason: .normal, text: DirectMessageDriverCloseText.receiverStorageFailure)
            return
        }
        guard !chats.isEmpty else { return }
        host.promote(sender)  // no longer a stranger (SessionTable's eviction order)
        let incoming = chats.map {
            ReceivedChat(
                id: $0.id, sequence: Int64(clamping: $0.sequence), createdAt: Int64(clamping: $0.createdAt),
                body: $0.body, replyTo: $0.replyTo)
        }
        let results: [(message: StoredMessage, isNew: Bool)]
        prepareToCarryDeliveryMarks()
        do {
            // The message.received events commit with the messages (one transaction).
            results = try store.storeIncoming(
                incoming, from: sender, to: me, at: now,
                journal: host.messageJournal(ControlEvent.messageReceived))
        } catch {
            _ = deliveryMarksCarried()
            // Not stored, so not acknowledged: the sender keeps them queued and resends.
            log.error("could not store incoming messages; they stay queued at the sender", ["error": "\(error)"])
            link.close(reason: .normal, text: DirectMessageDriverCloseText.receiverStorageFailure)
            return
        }
        // Marks that rode on it first: their journal rows precede the messages' rows.
        let delivered = deliveryMarksCarried()
        // Acknowledged once on disk: with group commit the transaction above returns before
        // its sync (Store+GroupCommit.swift), and an ack stops the sender's retries. `last`:
        // the sync that releases the ack releases the `message.received` lines first (the
        // control connections' waiters), so this node's people see the message before the
        // ack leaves. The ack's write wakes the sender: where both share a CPU (one machine,
        // row 3), the sender's turn ran before the notification was written (~100 µs).
        let ids = chats.map(\.id)
        store.whenDurable(through: nil, last: true) { [weak self, weak link] in
            guard self != nil, let link else { return }
            link.sendAcks(ids)
        }
        host.quotaStored(results.filter(\.isNew).map { $0.message.body.utf8.count }, from: sender)
        for r in results where r.isNew { host.emit(.messageReceived(r.message)) }
        pumpSessions(of: delivered)
    }

    /// The peer of `link` acknowledged `ids`: the window frees their slots, the direct ones'
    /// delivery marks are queued (`DeliveryMarkFold`; `message.delivered` once committed),
    /// the other lanes take their part, and the session is pumped again.
    func acknowledged(_ ids: [MessageID], on link: Link) {
        guard let host, let peer = link.remoteIdentityKey else { return }
        let ack = host.withWindow(of: link) { $0.acknowledge(ids) } ?? SendWindow.Acknowledgement(unknown: ids)
        let waiting = store.queueDeliveryMarks(ids, by: peer, at: clock.wallMilliseconds())
        if waiting >= DeliveryMarkFold.maxPendingIDs {
            flushDeliveryMarks()
        } else if waiting > 0 {
            if marksWaitingSince == nil { marksWaitingSince = clock.monotonicNow() }
            armMarkFlush(in: DeliveryMarkFold.flushDelay)
        }
        host.actionsAcknowledged(ack.actionItems + ack.unknown, by: peer)
        host.roomTrafficAcknowledged(ack.roomItems + ack.unknown, by: peer)
        host.roomSyncAcknowledged(ids, by: peer)
        pump(link)
    }

    // MARK: Delivery marks

    /// Writes the queued delivery marks now, alone, and reports what they delivered (the
    /// timer, too many waiting, a read receipt, and `Node.stop`: a clean stop loses no
    /// mark); `pumping`: the sessions of the peers they delivered to are pumped again.
    func flushDeliveryMarks(pumping: Bool = true) {
        marksWaitingSince = nil
        if store.hasPendingDeliveryMarks {
            do {
                try store.flushDeliveryMarks(journal: host?.messageJournal(ControlEvent.messageDelivered))
            } catch {
                log.error(
                    "could not record delivery; the messages will be sent again and de-duplicated",
                    ["error": "\(error)"])
            }
        }
        let delivered = reportDeliveries()
        if pumping { pumpSessions(of: delivered) }
    }

    /// A delivery can release what waits for it (an edit, delete or reaction is sent only
    /// once its target is delivered: `Store.pendingActions`), so the peers' sessions are
    /// pumped once the marks are committed.
    private func pumpSessions(of peers: Set<IdentityPublicKey>) {
        for peer in peers {
            if let link = host?.activeConnection(for: peer) { pump(link) }
        }
    }

    /// Before a transaction that carries the queued marks: their journal rows, asked now so
    /// that events held by the journal are stored first (ids in the order events are sent).
    private func prepareToCarryDeliveryMarks() {
        guard store.hasPendingDeliveryMarks else { return }
        store.journalDeliveryMarks(host?.messageJournal(ControlEvent.messageDelivered))
    }

    /// After a transaction that may have carried the queued marks: what they delivered is
    /// reported; if it failed they wait again (from when they first waited).
    private func deliveryMarksCarried() -> Set<IdentityPublicKey> {
        if !store.hasPendingDeliveryMarks { marksWaitingSince = nil }
        return reportDeliveries()
    }

    private func armMarkFlush(in delay: TimeAmount) {
        guard markFlush == nil else { return }
        markFlush = loop.scheduleTask(in: delay) { [weak self] in self?.markFlushDue() }
    }

    /// The timer: the marks that waited `DeliveryMarkFold.flushDelay` are written alone;
    /// younger ones (queued after a transaction carried the older) wait their own delay.
    private func markFlushDue() {
        markFlush = nil
        guard let since = marksWaitingSince, store.hasPendingDeliveryMarks else {
            marksWaitingSince = nil
            return
        }
        let waited = (clock.monotonicNow() - since).wholeNanoseconds
        let delay = DeliveryMarkFold.flushDelay.nanoseconds
        if waited >= delay {
            flushDeliveryMarks()
        } else {
            armMarkFlush(in: .nanoseconds(delay - waited))
        }
    }

    /// `message.delivered` for every message a committed mark delivered; the peers they
    /// were delivered to.
    @discardableResult
    private func reportDeliveries() -> Set<IdentityPublicKey> {
        let delivered = store.takeCommittedDeliveries()
        guard !delivered.isEmpty else { return [] }
        var perPeer: [IdentityPublicKey: Int] = [:]
        for d in delivered { if let peer = d.recipient.peerKey { perPeer[peer, default: 0] += 1 } }
        for (peer, count) in perPeer {
            host?.promote(peer)
            ledger.delivered(count, by: peer)
        }
        for d in delivered { host?.emit(.messageDelivered(d)) }
        return Set(perPeer.keys)
    }
}
