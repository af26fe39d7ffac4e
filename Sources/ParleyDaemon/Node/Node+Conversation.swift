import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Replies, edits, deletes for everyone, reactions and the status line (docs/PROTOCOL.md,
/// "Conversation records"): routed to `ConversationDriver` (`ConversationRules` decides).
/// The names other files call (ControlDispatcher, Node+RoomSync, the direct message
/// path's host) stay here.
extension Node {

    var conversation: ConversationDriver<Node> { messageDriver.conversation }

    // MARK: Local

    /// The message a person names by its id or an id prefix (8+ hex digits).
    func resolveMessage(_ query: String) throws -> StoredMessage { try conversation.resolveMessage(query) }

    /// Sends `body` as a reply to `target`, to the other party of its conversation (or to
    /// its room).
    func reply(to target: StoredMessage, body: String) throws -> StoredMessage {
        switch try conversation.replyDestination(of: target) {
        case .room(let room): return try sendToRoom(room, body: body, replyTo: target.id)
        case .peer(let peer): return try sendMany([(peer, body)], replyTo: target.id)[0].get()
        }
    }

    /// This node's user edits, deletes or reacts to `target` (`ConversationDriver.perform`).
    func perform(_ action: MessageActionRecord.Action, on target: StoredMessage) throws -> StoredMessage {
        try conversation.perform(action, on: target)
    }

    /// `ConversationRules.judge` on what the store knows of the change's target
    /// (`ConversationDriver.judgeChange`).
    func judgeChange(
        _ action: MessageActionRecord.Action, sequence: Int64, from author: IdentityPublicKey, room: RoomID?,
        roomAccepts: Bool, facts: ActionTargetFacts?
    ) -> ActionVerdict {
        ConversationDriver<Node>.judgeChange(
            action, sequence: sequence, from: author, room: room, roomAccepts: roomAccepts, facts: facts)
    }

    func setStatus(_ text: String) throws -> (PresenceStatus, Int) { try conversation.setStatus(text) }
    func loadOwnStatus() { conversation.loadOwnStatus() }
    func announceStatus(on conn: PeerConnection) { conversation.announceStatus(on: conn) }

    // MARK: Pumping

    func pumpActions(_ conn: PeerConnection, peer: IdentityPublicKey) { conversation.pumpActions(conn, peer: peer) }

    func actionsAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) {
        conversation.actionsAcknowledged(ids, by: peer)
    }

    // MARK: Wire

    func connection(_ conn: PeerConnection, receivedActions actions: [MessageActionRecord]) {
        conversation.received(actions, on: conn)
    }

    /// A peer's status line is presence (`SessionDriver`).
    func connection(_ conn: PeerConnection, receivedStatus status: PresenceStatus) {
        guard let sender = activePeer(of: conn) else { return }
        sessionDriver.statusReceived(status, from: sender)
    }
}

extension Node: ConversationHost {
    var sessionPeers: [IdentityPublicKey] { Array(sessionDriver.table.peers) }

    func roomState(_ room: RoomID) throws(StoreError) -> RoomState? { try roomEntry(room).state }

    func deleteApplied() { messageDriver.deleteApplied() }
}
