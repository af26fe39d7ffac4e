import ParleyCore

/// Room sync's storage (issue 30; docs/PROTOCOL.md "Room sync"): the signed room messages
/// and changes members pass on, the peers known to sync, and the room rows sync stores
/// what it verified into. The seam `RoomSyncDriver` depends on, one small protocol per
/// concern as libsignal's storage traits are, so a test can stand between the driver and
/// a real store. Typed keys and ids in and out.
public protocol RoomSyncStore: AnyObject {
    // The signed rows (Store+RoomSync.swift).
    func insertSignedRoomMessage(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64, id: MessageID, encoded: [UInt8], at: Int64
    ) throws(StoreError) -> Store.SignedRoomMessageInsert
    func insertSignedRoomMessages(_ rows: [Store.SignedRoomMessageRow], at: Int64) throws(StoreError)
        -> [Store.SignedRoomMessageInsert]
    func nextRoomSequence(room: RoomID, author: IdentityPublicKey) throws(StoreError) -> UInt64
    func signedRoomMessages(room: RoomID, author: IdentityPublicKey, sequences: [UInt64]) throws(StoreError)
        -> [[UInt8]]
    func signedRoomMessage(id: MessageID, author: IdentityPublicKey) throws(StoreError) -> [UInt8]?
    func signedRoomMessageSequences() throws(StoreError) -> [(
        room: RoomID, author: IdentityPublicKey, sequence: UInt64
    )]

    // Who syncs (Store+RoomSyncPeers.swift).
    func setRoomSyncPeer(_ identity: IdentityPublicKey, _ feature: RoomSyncFeature, syncing: Bool) throws(StoreError)
    func roomSyncPeers(_ feature: RoomSyncFeature) throws(StoreError) -> [IdentityPublicKey]

    // The rooms and their messages, as sync reads and writes them.
    func rooms() throws(StoreError) -> [RoomRecord]
    /// False while both room outboxes are known to be empty (nothing to mark held).
    var roomOutboxesMayHaveWork: Bool { get }
    func markRoomMessagesHeld(
        room: RoomID, author: IdentityPublicKey, ranges: [ClosedRange<UInt64>], by member: IdentityPublicKey, at: Int64
    ) throws(StoreError) -> RoomDeliveryChange
    func storeIncomingRoomMessages(_ messages: [IncomingMessage], room: RoomID, at: Int64)
        throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    func messages(id: MessageID, limit: Int) throws(StoreError) -> [StoredMessage]
    func receiveActions(
        _ actions: [IncomingAction], me: IdentityPublicKey, at now: Int64,
        judge: (IncomingAction, ActionTargetFacts?) -> Bool
    ) throws(StoreError) -> [ReceivedActionOutcome]
    func queueRoomOperations(_ hashes: [RoomOperationHash], for members: [IdentityPublicKey], at: Int64)
        throws(StoreError)
}

extension Store: RoomSyncStore {}
