import NIOCore
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the conversation records need from the rest of the node: who this node is, the
/// sessions and their windows, the room state that decides who may act in a room, the
/// signed form of our own room changes (room sync), the erasure purge, and the events
/// for the control side. `Node` is the host (Node+Conversation.swift); a test stands in.
protocol ConversationHost: AnyObject {
    associatedtype Link: MessageLink

    var myIdentityKey: IdentityPublicKey { get }
    /// The peer of `link` if `link` carries its session (records on any other are ignored).
    func activePeer(of link: Link) -> IdentityPublicKey?
    func activeConnection(for peer: IdentityPublicKey) -> Link?
    /// Every peer with a session now.
    var sessionPeers: [IdentityPublicKey] { get }
    /// Runs `body` on the send window of `link`'s session; nil if there is none. `body`
    /// must not send.
    func withWindow<R>(of link: Link, _ body: (inout SendWindow) -> R) -> R?
    /// Sends what is queued for the session of `link`, every lane in order.
    func pump(_ link: Link)
    /// The room's resolved state in this node's view (nil: not resolved here).
    func roomState(_ room: RoomID) throws(StoreError) -> RoomState?
    /// Signs and keeps this node's change of a room message (after it was queued).
    func signRoomChange(_ action: MessageActionRecord.Action, of target: MessageID, id: MessageID, room: RoomID)
    /// The signed form of our room change `id`, for a member that syncs rooms (nil: send
    /// the unsigned record).
    func signedRoomChangeForSending(id: MessageID, to peer: IdentityPublicKey, on link: Link) -> SignedRoomMessage?
    /// A delete erased a text (the search index is purged: `MessageDriver.deleteApplied`).
    func deleteApplied()
    func emit(_ e: NodeEvent)

    // The receive quota (Node+Quota.swift): every action row a peer makes this store keep
    // counts against that peer's quota like a chat (one message, its text's bytes).
    /// For each (id, text bytes) of one read from `sender`: those refused, by reason.
    /// Throws when the store cannot count: nothing of the read is taken.
    func judgeActionsByQuota(_ actions: [(id: MessageID, size: Int)], from sender: IdentityPublicKey)
        throws(StoreError) -> [(RefusalReason, [MessageID])]
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: Link)
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey)
}

/// Where a reply goes: the room of its target, or the other party of its conversation.
enum ReplyDestination {
    case room(RoomRecord)
    case peer(PeerRecord)
}

/// Replies, edits, deletes for everyone, reactions, read receipts and the status line
/// (docs/PROTOCOL.md, "Conversation records"): `ConversationRules` (ParleyNodeCore)
/// decides who may do what, for this node's user (`judgeLocal`) and for what peers send
/// (`judge`); this driver asks the store what it knows of the target, stores, queues in
/// the action outbox and sends within the session's window.
///
/// - `perform`: the user's edit, delete or reaction, judged, applied and queued at once.
/// - `pumpActions` / `actionsAcknowledged`: the action outbox, per session.
/// - `received`: a peer's actions, judged and stored in one transaction, acknowledged
///   (refused ones too: a resend would be refused again) and logged when refused.
/// - `markRead` / `sendPendingReadReceipts` / `readReceiptsReceived`: read state.
/// - `setStatus` / `loadOwnStatus` / `announceStatus`: our status line (peers' lines are
///   `SessionDriver`'s presence).
///
/// Its state (the outbox hint, the read-receipt setting, our status line) is its own and
/// lives on the node's event loop (the loop is its lock).
final class ConversationDriver<Host: ConversationHost> {
    typealias Link = Host.Link

    /// The settings key of our status line.
    static var statusSettingKey: String { "status" }
    /// Most read-receipt records handed to one session at a time (each names up to
    /// `WireLimits.maxAcksPerRecord` messages): 100,000 receipts, about 1.6 MB, bounds the
    /// work of one call; anything beyond goes with the next session or the next read.
    static var maxReadReceiptRecordsPerFlush: Int { 100 }

    /// Only the conversation concern of the store.
    let store: any ConversationStore
    private let loop: EventLoop
    private let clock: any NodeClock
    private let log: Logger
    /// Refused actions are logged once per sender per interval (a flood costs no more).
    private let attackLog: RateLimitedLog
    /// The node (set once it is built; it owns this driver).
    weak var host: Host?

    /// False once the action outbox was found empty (and nothing was queued since): the
    /// action pump then skips its query.
    var actionOutboxMayHaveWork = true
    /// `read_receipts`: tell senders when the local user read their messages.
    var sendsReadReceipts = true
    /// This node's own status line, as last set (kept in the store's settings; told to
    /// each peer that understands it at session start).
    private(set) var ownStatus = PresenceStatus.none

    init(store: any ConversationStore, loop: EventLoop, clock: any NodeClock, log: Logger, attackLog: RateLimitedLog?) {
        self.store = store
        self.loop = loop
        self.clock = clock
        self.log = log
        self.attackLog = attackLog ?? RateLimitedLog(logger: log, level: .warning, interval: .seconds(60))
    }

    // MARK: The user's own changes

    /// The message a person names by its id or an id prefix (8+ hex digits).
    func resolveMessage(_ query: String) throws -> StoredMessage {
        let found: DecodedRows<StoredMessage>
        do { found = try store.messages(idPrefix: query, limit: 2) } catch {
            if case .invalidArgument = error { throw ConversationError.messageNotFound(query) }
            throw NodeError.storage(error)
        }
        // A damaged row with the prefix counts: a prefix naming it and another message is
        // ambiguous, never the other one.
        let count = found.records.count + found.unreadable.count
        guard count > 0 else { throw ConversationError.messageNotFound(query) }
        guard count == 1 else { throw ConversationError.messageAmbiguous(query, count) }
        guard let first = found.records.first else {
            throw ConversationError.messageUnreadable(query, cursor: found.unreadable[0].rowID)
        }
        return first
    }

    /// Where a reply to `target` goes: its room, or the other party of its conversation.
    func replyDestination(of target: StoredMessage) throws -> ReplyDestination {
        do {
            if let roomID = target.room {
                guard let room = try store.room(id: roomID) else { throw RoomError.notFound(roomID.hex) }
                return .room(room)
            }
            guard let key = target.peer.peerKey, let peer = try store.peer(identity: key) else {
                throw ConversationError.messageNotFound(target.id.hex)
            }
            return .peer(peer)
        } catch let e as StoreError { throw NodeError.storage(e) }
    }

    /// This node's user edits, deletes or reacts to `target`: judged by the same rules a
    /// receiver applies, applied here at once and queued for the peer (or every other
    /// member of the room, in our view).
    func perform(_ action: MessageActionRecord.Action, on target: StoredMessage) throws -> StoredMessage {
        guard let host else { throw NodeError.notApplicable("the node is stopping: nothing was changed") }
        let me = host.myIdentityKey
        let (kind, body) = Self.stored(action)
        if case .edit(let text) = action, text.utf8.count > WireLimits.maxBodyBytes {
            throw NodeError.bodyTooLarge(text.utf8.count)
        }
        let reactionText: String? = if case .reaction(let r, _) = action { r.text } else { nil }
        do {
            var members: [IdentityPublicKey] = []
            var amMember = false
            if let roomID = target.room, let state = try host.roomState(roomID) {
                amMember = state.hasJoined(me)
                members = RoomDistribution.messageRecipients(in: state, me: me)
            }
            let destination = target.conversation
            guard try store.queuedActionCount(to: destination) < NodeLimits.maxQueuedActionsPerPeer else {
                throw ConversationError.queueFull(NodeLimits.maxQueuedActionsPerPeer)
            }
            let facts = try store.actionTargetFacts(target, author: me, reaction: reactionText)
            if let refusal = ConversationRules.judgeLocal(
                action, me: me, target: facts.ruleTarget, amRoomMember: amMember,
                reactionsByMe: facts.reactionsByAuthor, reactionIsNew: !facts.hasThisReaction)
            {
                throw ConversationError.refused(refusal, target.id.hex)
            }
            let now = clock.wallMilliseconds()
            let actionID = MessageID.random()
            let updated = try store.performLocalAction(
                NewLocalAction(
                    id: actionID, peer: destination, target: target, kind: kind, body: body, createdAt: now,
                    members: members),
                me: me, at: now)
            if let roomID = target.room { host.signRoomChange(action, of: target.id, id: actionID, room: roomID) }
            actionOutboxMayHaveWork = true
            if kind == .delete { host.deleteApplied() }
            host.emit(.messageUpdated(updated))
            let recipients = target.room == nil ? target.peer.peerKey.map { [$0] } ?? [] : members
            for peer in recipients { if let link = host.activeConnection(for: peer) { host.pump(link) } }
            return updated
        } catch let e as StoreError { throw NodeError.storage(e) }
    }

    /// An action as the store keeps it: its kind and body (an edit's text, a reaction).
    static func stored(_ action: MessageActionRecord.Action) -> (MessageActionKind, String?) {
        switch action {
        case .edit(let text): (.edit, text)
        case .delete: (.delete, nil)
        case let .reaction(r, added): (added ? .react : .unreact, r.text)
        }
    }

    /// The bytes the receive quota counts for a peer's action: the text the store keeps
    /// with its row (an edit's text, a reaction), as `Store.incomingUsage` sums them.
    static func keptBytes(_ action: MessageActionRecord.Action) -> Int {
        stored(action).1?.utf8.count ?? 0
    }

    /// What newly stored actions added to their author's usage, one entry per new row:
    /// its text's bytes if applied, 0 if refused or stale (kept without text, to
    /// de-duplicate: still a row). Resends (already stored) add nothing.
    static func keptSizes(_ outcomes: [ReceivedActionOutcome]) -> [Int] {
        outcomes.filter(\.isNew).map { $0.updated != nil ? ($0.action.body?.utf8.count ?? 0) : 0 }
    }

    /// `ConversationRules.judge` on what the store knows of the change's target (whoever
    /// handed the change over: its author directly, or a member passing on a signed one).
    static func judgeChange(
        _ action: MessageActionRecord.Action, sequence: Int64, from author: IdentityPublicKey, room: RoomID?,
        roomAccepts: Bool, facts: ActionTargetFacts?
    ) -> ActionVerdict {
        ConversationRules.judge(
            action, sequence: sequence, from: author, room: room, roomAccepts: roomAccepts,
            target: facts?.ruleTarget, reactionsBySender: facts?.reactionsByAuthor ?? 0,
            reactionIsNew: !(facts?.hasThisReaction ?? false))
    }

    // MARK: The action outbox

    /// Sends our queued actions for `peer` within the window, to a peer that understands
    /// them (one that does not keeps them queued, so they go out once it is upgraded).
    func pumpActions(_ link: Link, peer: IdentityPublicKey) {
        guard let host, actionOutboxMayHaveWork, link.remoteFeatures.contains(.conversation),
            let window = host.withWindow(of: link, { (free: $0.freeSlots, count: $0.count) }), window.free > 0
        else { return }
        let pending: [StoredAction]
        do {
            pending = try store.pendingActions(to: peer, limit: window.free + window.count)
            if pending.isEmpty, try !store.hasQueuedActions() { actionOutboxMayHaveWork = false }
        } catch {
            log.error("could not read the action outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for a in pending {
            let id = a.id
            // In flight, or refused by the peer on this session (it stays queued).
            if host.withWindow(of: link, { $0.isInFlight(id) || $0.refusedActions.contains(id) }) == true {
                continue
            }
            let action: MessageActionRecord.Action
            switch a.kind {
            case .edit: action = .edit(body: a.body ?? "")
            case .delete: action = .delete
            case .react, .unreact:
                guard let r = try? Reaction(a.body ?? "") else { continue }
                action = .reaction(r, added: a.kind == .react)
            }
            let bytes = a.body?.utf8.count ?? 0
            guard host.withWindow(of: link, { $0.admit(id, bytes: bytes, lane: .messageAction, now: now) }) == true
            else { break }
            // A room change this node signed goes signed to a member with room sync (which
            // can pass it on); the unsigned room record to the others.
            if a.room != nil, let signed = host.signedRoomChangeForSending(id: id, to: peer, on: link) {
                link.send(.roomMessage(.verified(signed)))
                continue
            }
            link.send(
                .messageAction(
                    MessageActionRecord(
                        id: id, sequence: UInt64(max(0, a.sequence)), createdAt: UInt64(max(0, a.createdAt)),
                        target: a.target, action: action, room: a.room)))
        }
    }

    /// `peer` acknowledged these (the action lane's part of an ack, and ids the window did
    /// not know: sent on an earlier session).
    func actionsAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard !ids.isEmpty, actionOutboxMayHaveWork else { return }
        do { _ = try store.markActionsDelivered(ids: ids, by: peer) } catch {
            log.error(
                "could not record an action's delivery; it will be sent again and de-duplicated",
                ["error": "\(error)"])
        }
    }

    // MARK: Actions from a peer

    /// Edits, deletes and reactions from the peer of `link`: first judged by the peer's
    /// receive quota (each is a row this store keeps: over the quota it is answered with a
    /// `refused` record, not stored, and stays queued at the sender), then stored and
    /// judged by `ConversationRules` in one transaction, then acknowledged (those the rules
    /// refuse too: a resend would be refused again). A store failure, or a count the store
    /// cannot give, acknowledges none and closes the session (the sender keeps them queued).
    func received(_ arrived: [MessageActionRecord], on link: Link) {
        guard let host, let sender = host.activePeer(of: link) else { return }
        let me = host.myIdentityKey
        let refusedByQuota: [(RefusalReason, [MessageID])]
        do {
            refusedByQuota = try host.judgeActionsByQuota(
                arrived.map { ($0.id, Self.keptBytes($0.action)) }, from: sender)
        } catch {
            // Not measurable: none is stored or acknowledged; they stay queued at the sender.
            link.close(reason: .normal, text: DirectMessageDriverCloseText.receiverStorageFailure)
            return
        }
        let overQuota = Set(refusedByQuota.flatMap(\.1))
        // Over the quota: refused (they stay queued at the sender), to a peer that keeps
        // refused changes queued; an older one would resend them at once, so to it they
        // are acknowledged and dropped (`ProtocolFeatures.actionRefusals`).
        var dropped: [MessageID] = []
        if !overQuota.isEmpty {
            if link.remoteFeatures.contains(.actionRefusals) {
                host.sendRefusals(refusedByQuota, on: link)
            } else {
                dropped = arrived.map(\.id).filter { overQuota.contains($0) }
                attackLog.log(
                    key: "action-quota:" + sender.hex,
                    "edits, deletes or reactions over the receive quota acknowledged and dropped (the peer's version cannot keep refused ones queued)",
                    ["peer": sender.fingerprintText, "count": "\(dropped.count)"])
            }
        }
        let actions = overQuota.isEmpty ? arrived : arrived.filter { !overQuota.contains($0.id) }
        guard !actions.isEmpty else {
            if !dropped.isEmpty { link.sendAcks(dropped) }
            return
        }
        let incoming = actions.map { a -> IncomingAction in
            let (kind, body) = Self.stored(a.action)
            return IncomingAction(
                id: a.id, author: sender, sequence: Int64(clamping: a.sequence),
                createdAt: Int64(clamping: a.createdAt), target: a.target, kind: kind, body: body, room: a.room)
        }
        // Whether the sender may act in each room named: both joined members in our view
        // (a change from a member whose join has not arrived yet is refused, not held: the
        // author resends it only until acknowledged, and an edit is not worth holding). A
        // room this node cannot read counts as not accepting.
        var roomAccepts: [RoomID: Bool] = [:]
        for room in Set(actions.compactMap(\.room)) {
            let state = (try? host.roomState(room)) ?? nil
            roomAccepts[room] = RoomDistribution.messageVerdict(in: state, from: sender, me: me) == .accept
        }
        // The decoded record of each id (the first, should a peer repeat an id in one read).
        var records: [MessageID: MessageActionRecord] = [:]
        for a in actions where records[a.id] == nil { records[a.id] = a }
        var refusals: [(IncomingAction, ActionRefusal)] = []
        let outcomes: [ReceivedActionOutcome]
        do {
            outcomes = try store.receiveActions(incoming, me: me, at: clock.wallMilliseconds()) { action, facts in
                guard let record = records[action.id] else { return false }
                let verdict = Self.judgeChange(
                    record.action, sequence: action.sequence, from: sender, room: record.room,
                    roomAccepts: record.room.map { roomAccepts[$0] ?? false } ?? false, facts: facts)
                switch verdict {
                case .apply: return true
                case .stale: return false
                case .refuse(let why):
                    refusals.append((action, why))
                    return false
                }
            }
        } catch {
            log.error("could not store incoming message actions; they stay queued at the sender", ["error": "\(error)"])
            link.close(reason: .normal, text: DirectMessageDriverCloseText.receiverStorageFailure)
            return
        }
        link.sendAcks(actions.map(\.id) + dropped)
        host.quotaStored(Self.keptSizes(outcomes), from: sender)
        for (a, why) in refusals {
            _ = attackLog.log(
                key: sender.hex, "message action refused",
                ["peer": sender.fingerprintText, "kind": a.kind.rawValue, "target": "\(a.target)", "why": "\(why)"])
        }
        if outcomes.contains(where: { $0.updated != nil && $0.action.kind == .delete }) { host.deleteApplied() }
        for o in outcomes { if let m = o.updated { host.emit(.messageUpdated(m)) } }
    }

    // MARK: Read state

    /// The local user read the conversation with `peer` up to `upTo` (a cursor; nil: all).
    /// Returns how many messages changed and how many from the peer are still unread.
    func markRead(_ peer: IdentityPublicKey, upTo: Int64?) throws(NodeError) -> (marked: Int, unread: Int) {
        loop.preconditionInEventLoop()
        let ids: [MessageID]
        let unread: Int
        do {
            ids = try store.markIncomingRead(
                from: peer, upTo: upTo, at: clock.wallMilliseconds(), queueReceipts: sendsReadReceipts)
            unread = try store.unreadCounts()[peer] ?? 0
        } catch {
            throw .storage(error)
        }
        if !ids.isEmpty, let link = host?.activeConnection(for: peer) { sendPendingReadReceipts(link) }
        return (ids.count, unread)
    }

    /// Hands the read receipts owed to the peer of `link` to that session. Receipts are
    /// not acknowledged: once written to a session they are no longer owed (see
    /// docs/PROTOCOL.md, readReceipt). With read receipts off nothing is sent.
    func sendPendingReadReceipts(_ link: Link) {
        guard sendsReadReceipts, let peer = host?.activePeer(of: link) else { return }
        for _ in 0..<Self.maxReadReceiptRecordsPerFlush {
            let ids: [MessageID]
            do {
                ids = try store.pendingReadReceipts(to: peer, limit: WireLimits.maxAcksPerRecord)
                guard !ids.isEmpty else { return }
                link.send(.readReceipt(ids))
                try store.clearPendingReadReceipts(ids: ids, from: peer)
            } catch {
                log.error(
                    "could not read or update owed read receipts; they are sent with the next session",
                    ["error": "\(error)"])
                return
            }
            if ids.count < WireLimits.maxAcksPerRecord { return }
        }
    }

    /// The peer of `link` read these of our messages. (The caller first takes the receipt
    /// as an ack: the reader stored the message before reading it.)
    func readReceiptsReceived(_ ids: [MessageID], on link: Link) {
        guard let host, let peer = host.activePeer(of: link) else { return }
        do {
            let read = try store.markReadByRecipient(ids: ids, by: peer, at: clock.wallMilliseconds())
            for m in read { host.emit(.messageRead(m)) }
        } catch {
            log.error("could not record read receipts", ["peer": peer.fingerprintText, "error": "\(error)"])
        }
    }

    // MARK: Our status line

    /// Sets this node's status line, keeps it, and tells every connected peer that
    /// understands it. Returns the status and how many peers were told.
    func setStatus(_ text: String) throws -> (PresenceStatus, Int) {
        let status: PresenceStatus
        do { status = try PresenceStatus(typed: text) } catch { throw ConversationError.invalidStatus(error) }
        do { try store.setSetting(Self.statusSettingKey, status.isEmpty ? nil : status.text) } catch {
            throw NodeError.storage(error)
        }
        ownStatus = status
        var told = 0
        for peer in host?.sessionPeers ?? [] {
            guard let link = host?.activeConnection(for: peer), link.remoteFeatures.contains(.conversation) else {
                continue
            }
            link.send(.status(status))
            told += 1
        }
        return (status, told)
    }

    /// Reads the kept status line at start (a damaged value is dropped, not fatal).
    func loadOwnStatus() {
        guard let text = try? store.setting(Self.statusSettingKey) else { return }
        ownStatus = (try? PresenceStatus(utf8: Array(text.utf8))) ?? .none
    }

    /// At the start of a session: our status line, if the peer understands it.
    func announceStatus(on link: Link) {
        guard link.remoteFeatures.contains(.conversation), !ownStatus.isEmpty else { return }
        link.send(.status(ownStatus))
    }
}

extension ActionTargetFacts {
    /// The rules' view of a stored message (`ConversationRules`).
    var ruleTarget: ActionTarget {
        let m = message
        return ActionTarget(
            author: m.sender, conversationPeer: m.room == nil ? m.peer.peerKey : nil,
            isDeleted: m.deletedAt != nil, appliedChangeSequence: changeSequence, room: m.room)
    }
}
