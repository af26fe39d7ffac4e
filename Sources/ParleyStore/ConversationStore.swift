import ParleyCore

/// What the conversation records need from the store (docs/PROTOCOL.md, "Conversation
/// records"): the messages a person names, the action outbox (edits, deletes, reactions
/// queued per peer), the actions peers send (stored and judged in one transaction), read
/// state and its receipts, and the status line's setting. The seam `ConversationDriver`
/// depends on, one small protocol per concern as libsignal's storage traits are. Typed
/// keys and ids in and out.
public protocol ConversationStore: SettingsStore {
    /// Messages whose id starts with `prefix` (hex), at most `limit`.
    func messages(idPrefix prefix: String, limit: Int) throws(StoreError) -> DecodedRows<StoredMessage>
    func room(id: RoomID) throws(StoreError) -> RoomRecord?
    func peer(identity: IdentityPublicKey) throws(StoreError) -> PeerRecord?

    // The action outbox.
    /// Actions queued to `peer` (a peer, or every member of a room) and not yet delivered.
    func queuedActionCount(to peer: MessageParty) throws(StoreError) -> Int
    /// What the rules need to know of `target` for an action by `author`.
    func actionTargetFacts(_ target: StoredMessage, author: IdentityPublicKey, reaction: String?)
        throws(StoreError) -> ActionTargetFacts
    /// Applies this node's own action and queues it for its recipients, in one transaction.
    func performLocalAction(_ action: NewLocalAction, me: IdentityPublicKey, at now: Int64)
        throws(StoreError) -> StoredMessage
    /// Undelivered actions to `peer`, oldest first, at most `limit`.
    func pendingActions(to peer: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredAction]
    func hasQueuedActions() throws(StoreError) -> Bool
    /// Marks the actions `peer` acknowledged delivered; how many changed.
    func markActionsDelivered(ids: [MessageID], by peer: IdentityPublicKey) throws(StoreError) -> Int

    /// Stores received actions (de-duplicated) and applies those `judge` allows, in one
    /// transaction.
    func receiveActions(
        _ actions: [IncomingAction], me: IdentityPublicKey, at now: Int64,
        judge: (IncomingAction, ActionTargetFacts?) -> Bool
    ) throws(StoreError) -> [ReceivedActionOutcome]

    // Read state.
    /// Marks what `peer` sent read up to `upTo` (nil: all); the ids that changed.
    func markIncomingRead(from peer: IdentityPublicKey, upTo: Int64?, at: Int64, queueReceipts: Bool)
        throws(StoreError) -> [MessageID]
    func unreadCounts() throws(StoreError) -> [IdentityPublicKey: Int]
    /// Read receipts owed to `peer`, at most `limit`.
    func pendingReadReceipts(to peer: IdentityPublicKey, limit: Int) throws(StoreError) -> [MessageID]
    func clearPendingReadReceipts(ids: [MessageID], from peer: IdentityPublicKey) throws(StoreError)
    /// Marks our messages `recipient` read; the ones that changed.
    func markReadByRecipient(ids: [MessageID], by recipient: IdentityPublicKey, at: Int64)
        throws(StoreError) -> [StoredMessage]
}

extension Store: ConversationStore {}

/// What the receive quota's refusals need from the store: which of a read's ids are
/// already stored (a resend is acknowledged, never refused), and recording a peer's
/// refusal of our messages (they stay queued). The seam `ReceiveQuotaDriver` depends on
/// beside `ReceiveQuotaStore`.
public protocol QuotaRefusalStore: AnyObject {
    /// The ones of `ids` already stored from `sender`.
    func storedIncomingIDs(_ ids: [MessageID], from sender: IdentityPublicKey) throws(StoreError) -> Set<MessageID>
    /// Records that `recipient` refused our messages `ids`; the messages that changed.
    func recordRefusal(ids: [MessageID], by recipient: IdentityPublicKey, reason: Int, at: Int64)
        throws(StoreError) -> [StoredMessage]
}

extension Store: QuotaRefusalStore {}
