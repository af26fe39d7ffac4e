import ParleyCore

/// Rooms' storage as the room driver (`RoomDriver`) uses it: the verified operations and
/// each room's cached resolution, the room outboxes (operations and messages queued per
/// member, acknowledged per member), and the room messages received. One protocol per
/// concern, like `MessageStore`: a test can stand between the driver and a real store.
/// Room sync's signed rows (Store+RoomSync.swift) are not part of it.
public protocol RoomStore: AnyObject {
    // Operations and the cached state.
    func roomOperations(room: RoomID) throws(StoreError) -> [StoredRoomOperation]
    /// False when the operation was stored already.
    func insertRoomOperation(_ op: StoredRoomOperation, at: Int64) throws(StoreError) -> Bool
    func room(id: RoomID) throws(StoreError) -> RoomRecord?
    func rooms() throws(StoreError) -> [RoomRecord]
    func saveRoom(_ room: RoomRecord) throws(StoreError)
    /// Unanswered invitations `inviter` delivered (`RoomAdmission.maxInvitationsPerSender`).
    func invitationCount(from inviter: IdentityPublicKey) throws(StoreError) -> Int
    /// Forgets invitations nobody answered since `before`; the rooms forgotten.
    func forgetInvitations(before: Int64) throws(StoreError) -> [RoomID]

    // The room operation outbox.
    func queueRoomOperations(_ hashes: [RoomOperationHash], for members: [IdentityPublicKey], at: Int64)
        throws(StoreError)
    func pendingRoomOperations(to member: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredRoomOperation]
    @discardableResult
    func acknowledgeRoomOperations(ackIDs: [MessageID], by member: IdentityPublicKey) throws(StoreError) -> Int

    // Room messages: ours queued per member, theirs stored.
    func queuedRoomMessageCount(room: RoomID) throws(StoreError) -> Int
    func nextRoomSequence(room: RoomID, author: IdentityPublicKey) throws(StoreError) -> UInt64
    func enqueueRoomMessages(_ messages: [Store.NewRoomMessage], sender: IdentityPublicKey) throws(StoreError)
        -> [StoredMessage]
    func pendingRoomMessages(to member: IdentityPublicKey, limit: Int) throws(StoreError) -> [StoredMessage]
    func storeIncomingRoomMessages(_ messages: [IncomingMessage], room: RoomID, at: Int64)
        throws(StoreError) -> [(message: StoredMessage, isNew: Bool)]
    /// A member acknowledged room traffic (operations and messages) by id.
    func acknowledgeRoomTraffic(ids: [MessageID], by member: IdentityPublicKey, at: Int64) throws(StoreError)
        -> RoomDeliveryChange
    /// False while both room outboxes are known to be empty.
    var roomOutboxesMayHaveWork: Bool { get }
}

extension Store: RoomStore {}
