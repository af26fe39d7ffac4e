import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Replies, edits, deletes for everyone, reactions and the status line (docs/PROTOCOL.md,
/// "Conversation records"). `ConversationRules` decides who may do what; this driver
/// stores, queues and sends.
extension Node {
    static let statusSettingKey = "status"

    // MARK: Local

    /// The message a person names by its id or an id prefix (8+ hex digits).
    func resolveMessage(_ query: String) throws -> StoredMessage {
        let found: [StoredMessage]
        do { found = try store.messages(idPrefix: query, limit: 2) } catch let e as StoreError {
            if case .invalidArgument = e { throw ConversationError.messageNotFound(query) }
            throw NodeError.storage(e)
        }
        guard let first = found.first else { throw ConversationError.messageNotFound(query) }
        guard found.count == 1 else { throw ConversationError.messageAmbiguous(query, found.count) }
        return first
    }

    /// Sends `body` as a reply to `target`, to the other party of its conversation (or to
    /// its room).
    func reply(to target: StoredMessage, body: String) throws -> StoredMessage {
        if let roomID = target.room {
            let room: RoomRecord
            do {
                guard let rec = try store.room(id: roomID) else { throw RoomError.notFound(roomID.hex) }
                room = rec
            } catch let e as StoreError { throw NodeError.storage(e) }
            return try sendToRoom(room, body: body, replyTo: target.id)
        }
        let peer: PeerRecord
        do {
            guard let key = target.peer.peerKey, let rec = try store.peer(identity: key) else {
                throw ConversationError.messageNotFound(target.id.hex)
            }
            peer = rec
        } catch let e as StoreError { throw NodeError.storage(e) }
        return try sendMany([(peer, body)], replyTo: target.id)[0].get()
    }

    /// This node's user edits, deletes or reacts to `target`: judged by the same rules a
    /// receiver applies, applied here at once and queued for the peer.
    func perform(_ action: MessageActionRecord.Action, on target: StoredMessage) throws -> StoredMessage {
        let reactionText: String?
        let kind: MessageActionKind
        let body: String?
        switch action {
        case .edit(let text):
            guard text.utf8.count <= WireLimits.maxBodyBytes else { throw NodeError.bodyTooLarge(text.utf8.count) }
            (kind, body, reactionText) = (.edit, text, nil)
        case .delete: (kind, body, reactionText) = (.delete, nil, nil)
        case let .reaction(r, added): (kind, body, reactionText) = (added ? .react : .unreact, r.text, r.text)
        }
        do {
            // A room message's change goes to every other member of the room in our view.
            var members: [IdentityPublicKey] = []
            var amMember = false
            if let roomID = target.room, let state = try roomEntry(roomID).state {
                amMember = state.hasJoined(myIdentityKey)
                members = RoomDistribution.messageRecipients(in: state, me: myIdentityKey)
            }
            let destination = target.conversation
            guard try store.queuedActionCount(to: destination) < NodeLimits.maxQueuedActionsPerPeer else {
                throw ConversationError.queueFull(NodeLimits.maxQueuedActionsPerPeer)
            }
            let facts = try store.actionTargetFacts(target, author: myIdentityKey, reaction: reactionText)
            if let refusal = ConversationRules.judgeLocal(
                action, me: myIdentityKey, target: actionTarget(facts),
                amRoomMember: amMember,
                reactionsByMe: facts.reactionsByAuthor,
                reactionIsNew: !facts.hasThisReaction)
            {
                throw ConversationError.refused(refusal, target.id.hex)
            }
            let actionID = MessageID.random()
            let updated = try store.performLocalAction(
                NewLocalAction(
                    id: actionID, peer: destination, target: target, kind: kind,
                    body: body, createdAt: nowMs, members: members),
                me: myIdentityKey, at: nowMs)
            if let roomID = target.room {
                signRoomChange(action, of: target.id, id: actionID, room: roomID)
            }
            messageDriver.actionOutboxMayHaveWork = true
            if kind == .delete { messageDriver.deleteApplied() }
            emit(.messageUpdated(updated))
            let recipients = target.room == nil ? target.peer.peerKey.map { [$0] } ?? [] : members
            for peer in recipients { if let conn = activeConnection(for: peer) { pump(conn) } }
            return updated
        } catch let e as StoreError { throw NodeError.storage(e) }
    }

    /// `ConversationRules.judge` on what the store knows of the change's target (whoever
    /// handed the change over: its author directly, or a member passing on a signed one).
    func judgeChange(
        _ action: MessageActionRecord.Action, sequence: Int64, from author: IdentityPublicKey, room: RoomID?,
        roomAccepts: Bool, facts: ActionTargetFacts?
    ) -> ActionVerdict {
        ConversationRules.judge(
            action, sequence: sequence, from: author, room: room, roomAccepts: roomAccepts,
            target: facts.flatMap(actionTarget), reactionsBySender: facts?.reactionsByAuthor ?? 0,
            reactionIsNew: !(facts?.hasThisReaction ?? false))
    }

    /// The rules' view of a stored message.
    func actionTarget(_ facts: ActionTargetFacts) -> ActionTarget? {
        let m = facts.message
        return ActionTarget(
            author: m.sender, conversationPeer: m.room == nil ? m.peer.peerKey : nil,
            isDeleted: m.deletedAt != nil, appliedChangeSequence: facts.changeSequence,
            room: m.room)
    }

    /// Sets this node's status line, keeps it, and tells every connected peer that
    /// understands it. Returns the status and how many peers were told.
    func setStatus(_ text: String) throws -> (PresenceStatus, Int) {
        let status: PresenceStatus
        do { status = try PresenceStatus(typed: text) } catch { throw ConversationError.invalidStatus(error) }
        do { try store.setSetting(Self.statusSettingKey, status.isEmpty ? nil : status.text) } catch {
            throw NodeError.storage(error)
        }
        sessionDriver.ownStatus = status
        var told = 0
        for peer in sessionDriver.table.peers {
            guard let conn = activeConnection(for: peer), conn.remoteFeatures.contains(.conversation) else { continue }
            conn.send(.status(status))
            told += 1
        }
        return (status, told)
    }

    /// Reads the kept status line at start (a damaged value is dropped, not fatal).
    func loadOwnStatus() {
        guard let text = try? store.setting(Self.statusSettingKey) else { return }
        sessionDriver.ownStatus = (try? PresenceStatus(utf8: Array(text.utf8))) ?? .none
    }

    /// At the start of a session: our status line, if the peer understands it.
    func announceStatus(on conn: PeerConnection) {
        guard conn.remoteFeatures.contains(.conversation), !sessionDriver.ownStatus.isEmpty else { return }
        conn.send(.status(sessionDriver.ownStatus))
    }

    // MARK: Pumping

    /// Sends our queued actions for `peer` within the window, to a peer that understands
    /// them (one that does not keeps them queued, so they go out once it is upgraded).
    func pumpActions(_ conn: PeerConnection, peer: IdentityPublicKey) {
        guard messageDriver.actionOutboxMayHaveWork, conn.remoteFeatures.contains(.conversation) else { return }
        let handle = ObjectIdentifier(conn)
        guard let window = sessionDriver.links[handle]?.window, window.freeSlots > 0 else { return }
        let pending: [StoredAction]
        do {
            pending = try store.pendingActions(to: peer, limit: window.freeSlots + window.count)
            if pending.isEmpty, try !store.hasQueuedActions() { messageDriver.actionOutboxMayHaveWork = false }
        } catch {
            log.error("could not read the action outbox", ["error": "\(error)"])
            return
        }
        let now = clock.monotonicNow()
        for a in pending {
            let (id, target) = (a.id, a.target)
            if sessionDriver.links[handle]?.window.isInFlight(id) == true { continue }
            let action: MessageActionRecord.Action
            switch a.kind {
            case .edit: action = .edit(body: a.body ?? "")
            case .delete: action = .delete
            case .react, .unreact:
                guard let r = try? Reaction(a.body ?? "") else { continue }
                action = .reaction(r, added: a.kind == .react)
            }
            guard
                sessionDriver.links[handle]?.window.admit(
                    id, bytes: a.body?.utf8.count ?? 0, lane: .messageAction, now: now) == true
            else { break }
            // A room change this node signed goes signed to a member with room sync (which
            // can pass it on); the unsigned room record to the others.
            if a.room != nil, let signed = signedRoomChangeForSending(id: id, to: peer, on: conn) {
                conn.send(.roomMessage(.verified(signed)))
                continue
            }
            conn.send(
                .messageAction(
                    MessageActionRecord(
                        id: id, sequence: UInt64(max(0, a.sequence)), createdAt: UInt64(max(0, a.createdAt)),
                        target: target, action: action, room: a.room)))
        }
    }

    func actionsAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        guard !ids.isEmpty, messageDriver.actionOutboxMayHaveWork else { return }
        do { try store.markActionsDelivered(ids: ids, by: peer) } catch {
            log.error(
                "could not record an action's delivery; it will be sent again and de-duplicated",
                ["error": "\(error)"])
        }
    }

    // MARK: Wire

    /// Edits, deletes and reactions from the peer of `conn`: stored and judged by
    /// `ConversationRules` in one transaction, then acknowledged (refused ones too: a
    /// resend would be refused again).
    func connection(_ conn: PeerConnection, receivedActions actions: [MessageActionRecord]) {
        guard let sender = activePeer(of: conn) else { return }
        let incoming = actions.map { a -> IncomingAction in
            let (kind, body): (MessageActionKind, String?)
            switch a.action {
            case .edit(let text): (kind, body) = (.edit, text)
            case .delete: (kind, body) = (.delete, nil)
            case let .reaction(r, added): (kind, body) = (added ? .react : .unreact, r.text)
            }
            return IncomingAction(
                id: a.id, author: sender, sequence: Int64(clamping: a.sequence),
                createdAt: Int64(clamping: a.createdAt), target: a.target, kind: kind, body: body,
                room: a.room)
        }
        // Whether the sender may act in each room named (both of us members in our view).
        var roomAccepts: [RoomID: Bool] = [:]
        for room in Set(actions.compactMap(\.room)) {
            let state = try? roomEntry(room).state
            // As for room messages: both joined members in our view (a change from a member
            // whose join has not arrived yet is refused, not held: the author resends it
            // only until acknowledged, and an edit is not worth holding).
            roomAccepts[room] =
                RoomDistribution.messageVerdict(in: state ?? nil, from: sender, me: myIdentityKey) == .accept
        }
        // The decoded record of each id (the first, should a peer repeat an id in one read).
        var records: [MessageID: MessageActionRecord] = [:]
        for a in actions where records[a.id] == nil { records[a.id] = a }
        var refusals: [(IncomingAction, ActionRefusal)] = []
        let outcomes: [ReceivedActionOutcome]
        do {
            outcomes = try store.receiveActions(incoming, me: myIdentityKey, at: nowMs) { action, facts in
                guard let record = records[action.id] else { return false }
                let verdict = judgeChange(
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
            conn.close(reason: .normal, text: "receiver storage failure")
            return
        }
        sendAcks(actions.map(\.id), on: conn)
        for (a, why) in refusals {
            _ = attackLog.log(
                key: sender.hex, "message action refused",
                ["peer": sender.fingerprintText, "kind": a.kind.rawValue, "target": "\(a.target)", "why": "\(why)"])
        }
        if outcomes.contains(where: { $0.updated != nil && $0.action.kind == .delete }) {
            messageDriver.deleteApplied()
        }
        for o in outcomes { if let m = o.updated { emit(.messageUpdated(m)) } }
    }

    func connection(_ conn: PeerConnection, receivedStatus status: PresenceStatus) {
        guard let sender = activePeer(of: conn) else { return }
        sessionDriver.statusReceived(status, from: sender)
    }
}
