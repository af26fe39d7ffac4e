import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Rooms are `RoomDriver`'s (Drivers/Rooms/): the node routes the local API and the
/// `PeerConnectionDelegate` callbacks to it and is its `RoomHost`. docs/PROTOCOL.md, "Rooms".
extension Node {
    // MARK: Routing: the room book

    /// The room's operations and state, from memory or loaded from the store.
    func roomEntry(_ id: RoomID) throws(StoreError) -> RoomBook.Entry { try rooms.entry(id) }

    /// Every stored room resolved again under the current rule (at start); the changed ones.
    @discardableResult
    func reResolveStoredRooms() throws(StoreError) -> [RoomRecord] { try rooms.reResolveStoredRooms() }

    /// The room as resolved now (nil before its create is known).
    func roomState(_ room: RoomRecord) throws -> RoomState? {
        do { return try rooms.entry(room.id).state } catch { throw NodeError.storage(error) }
    }

    /// Room sync's state, still in the room book (Node+RoomSync.swift reads and changes
    /// `roomBook.sync`, and `roomBook.cards` when a session ends): changed in place.
    var roomBook: RoomBook {
        get { rooms.book }
        _modify { yield &rooms.book }
    }

    /// The marks of held room messages written after their author's removal, built from
    /// the node's fields each time (no state of its own; Drivers/Rooms/AfterRemovalMarks.swift).
    var afterRemovalMarks: AfterRemovalMarks {
        AfterRemovalMarks(store: store, roomEntry: rooms.entry, emit: emit, log: log)
    }

    // MARK: Routing: the local API (control socket)

    func createRoom(name: String, members: [PeerRecord], policy: RoomOperation.Policy = .init()) throws -> RoomRecord {
        try rooms.create(name: name, members: members, policy: policy)
    }

    func changeRoom(_ room: RoomRecord, _ change: RoomOperation.Change) throws -> RoomRecord {
        try rooms.change(room, change)
    }

    func acceptInvitation(_ room: RoomRecord) throws -> RoomRecord { try rooms.acceptInvitation(room) }

    func declineInvitation(_ room: RoomRecord) throws -> RoomRecord { try rooms.declineInvitation(room) }

    /// Queues a message to the room's members; returns once it is on disk.
    func sendToRoom(_ room: RoomRecord, body: String, replyTo: MessageID? = nil) throws -> StoredMessage {
        try sendManyToRoom([(room, body, replyTo)])[0].get()
    }

    /// Pipelined sends to rooms, in one transaction (`RoomDriver.send`).
    func sendManyToRoom(_ sends: [(room: RoomRecord, body: String, replyTo: MessageID?)]) -> [Result<
        StoredMessage, Error
    >] {
        rooms.send(sends)
    }

    /// Finds a room by `#name`, name, or id prefix (at least 4 hex digits), `#` optional.
    func resolveRoom(_ selector: String) throws -> RoomRecord { try rooms.resolve(selector) }

    // MARK: Routing: the wire

    func connection(_ conn: PeerConnection, receivedRoomTraffic records: [RoomTraffic]) {
        rooms.received(records, on: conn)
    }

    /// The room part of an acknowledgement (`DirectMessageHost`).
    func roomTrafficAcknowledged(_ ids: [MessageID], by peer: IdentityPublicKey) { rooms.acknowledged(ids, by: peer) }

    /// The two room lanes of the pump (`DirectMessageHost`).
    func pumpRoomOperations(_ conn: PeerConnection, peer: IdentityPublicKey) { rooms.pumpOperations(conn, peer: peer) }
    func pumpRoomMessages(_ conn: PeerConnection, peer: IdentityPublicKey) { rooms.pumpMessages(conn, peer: peer) }

    /// The room changed (room sync): held room cards whose subject is now a member are learnt.
    func reconsiderHeldRoomCards() { rooms.reconsiderHeldCards() }
}

// MARK: The host of the room driver

extension Node: RoomHost {
    func currentCard() -> Card { ownIdentity.card }

    func roomCappedRemovalsChanged(_ room: RoomID, from old: RoomCappedRemovals, to new: RoomCappedRemovals) {
        afterRemovalMarks.cappedRemovalsChanged(room, from: old, to: new)
    }

    func logAttack(key: String, _ message: String, _ fields: [String: String]) {
        attackLog.log(key: key, message, fields)
    }
}
