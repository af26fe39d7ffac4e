import ParleyCore

/// The one-to-one message path's storage: the outbox (queue, read what is unsent, mark
/// delivered) and the inbox (store what a peer sent). The seam `DirectMessageDriver`
/// depends on, one small protocol per concern as libsignal's storage traits are
/// (`IdentityKeyStore`, `SessionStore`), so a test can stand between the driver and a real
/// store (fail a write, count reads). Typed keys and ids in and out.
///
/// Durability: `enqueue` and `storeIncoming` may return before their commit is on disk
/// (group commit, Store+GroupCommit.swift); `whenDurable` runs its action once it is. The
/// driver acknowledges a peer's messages, and answers a local send, only then.
public protocol MessageStore: AnyObject {
    /// The database file (named in an error the user sees).
    var path: String { get }
    /// Queues `messages` from `sender` in one transaction, sequence numbers in array order.
    func enqueue(_ messages: [NewOutgoingMessage], sender: IdentityPublicKey) throws(StoreError) -> [StoredMessage]
    /// Undelivered messages to `recipient` above `afterSequence`, oldest first, at most `limit`.
    func pendingOutgoing(to recipient: IdentityPublicKey, afterSequence: Int64, limit: Int)
        throws(StoreError) -> [StoredMessage]
    /// Every peer with undelivered direct messages, and how many (the send admission's bound).
    func pendingRecipients() throws(StoreError) -> [IdentityPublicKey: Int]
    /// Stores chats `sender`'s session decoded, de-duplicated by id; `journal`: their
    /// `message.received` events in the same transaction.
    func storeIncoming(
        _ chats: [ReceivedChat], from sender: IdentityPublicKey, to recipient: IdentityPublicKey, at: Int64,
        journal: MessageJournal?
    ) throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    /// Marks the messages `recipient` acknowledged as delivered; the ones that changed.
    func markDelivered(_ ids: [MessageID], by recipient: IdentityPublicKey, at: Int64, journal: MessageJournal?)
        throws(StoreError) -> [DeliveredMessage]
    /// Queues the delivery marks of `ids`, which `recipient` acknowledged at `at`: the next
    /// `enqueue` or `storeIncoming` writes them in its transaction, or `flushDeliveryMarks`
    /// alone. Returns how many acknowledged ids wait (Store+DeliveryMarks.swift).
    @discardableResult
    func queueDeliveryMarks(_ ids: [MessageID], by recipient: IdentityPublicKey, at: Int64) -> Int
    var hasPendingDeliveryMarks: Bool { get }
    /// The journal rows the queued marks write, whichever transaction carries them.
    func journalDeliveryMarks(_ journal: MessageJournal?)
    /// Writes the queued marks now in one transaction; if that fails they are given up
    /// (their messages are sent again at the next session).
    func flushDeliveryMarks(journal: MessageJournal?) throws(StoreError)
    /// The messages committed marks delivered since the last call, each once.
    func takeCommittedDeliveries() -> [DeliveredMessage]
    /// Runs `action` once commit `ticket` (nil: the newest so far) is on disk; `last`: after
    /// every action the same sync releases that was registered without it.
    func whenDurable(through ticket: UInt64?, last: Bool, _ action: @escaping () -> Void)
    /// Runs `body`; the sync its deferred commits need is asked for when it returns.
    func holdingSyncRequests<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T
    /// False while both room outboxes are known to be empty: the pump then skips the room
    /// queries that run before and after the direct messages.
    var roomOutboxesMayHaveWork: Bool { get }
}

extension Store: MessageStore {}
