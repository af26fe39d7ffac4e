import ParleyCore

@testable import ParleyStore

/// The store's message API is typed (`MessageID`, `IdentityPublicKey`, `RoomID`); its
/// tests name fixtures with readable hex (a repeated byte, a counter). These build the
/// typed inputs from such hex, so each test reads as before. Fixtures are well-formed by
/// construction: a malformed one traps, which fails the test loudly.
extension NewOutgoingMessage {
    init(id: String, recipient: String, body: String, createdAt: Int64, replyTo: String? = nil) {
        self.init(
            id: MessageID(hex: id)!, recipient: IdentityPublicKey(hex: recipient)!, body: body, createdAt: createdAt,
            replyTo: replyTo.map { MessageID(hex: $0)! })
    }
}

extension IncomingMessage {
    init(
        id: String, sender: String, recipient: String, sequence: Int64, createdAt: Int64, body: String,
        replyTo: String? = nil
    ) {
        self.init(
            id: MessageID(hex: id)!, sender: IdentityPublicKey(hex: sender)!,
            recipient: IdentityPublicKey(hex: recipient)!,
            sequence: sequence, createdAt: createdAt, body: body, replyTo: replyTo.map { MessageID(hex: $0)! })
    }
}

extension Store.NewRoomMessage {
    init(
        id: String, room: String, body: String, createdAt: Int64, members: [String], replyTo: String? = nil,
        signed: Store.SignedRoomMessageRow? = nil
    ) {
        self.init(
            id: MessageID(hex: id)!, room: RoomID(hex: room)!, body: body, createdAt: createdAt,
            members: members.map { IdentityPublicKey(hex: $0)! }, replyTo: replyTo.map { MessageID(hex: $0)! },
            signed: signed)
    }
}

extension Store {
    func pendingOutgoing(to recipient: String, afterSequence: Int64 = 0, limit: Int) throws(StoreError)
        -> [StoredMessage]
    {
        try InputValidation.requireIdentity(recipient, "recipient")
        return try pendingOutgoing(to: IdentityPublicKey(hex: recipient)!, afterSequence: afterSequence, limit: limit)
    }

    /// Hex lookups as a client would type them: malformed hex is refused as before.
    func message(id: String) throws(StoreError) -> StoredMessage? {
        try InputValidation.requireMessageID(id)
        return try message(id: MessageID(hex: id)!)
    }

    func message(id: String, sender: String) throws(StoreError) -> StoredMessage? {
        try InputValidation.requireMessageID(id)
        try InputValidation.requireIdentity(sender, "sender")
        return try message(id: MessageID(hex: id)!, sender: IdentityPublicKey(hex: sender)!)
    }

    func enqueue(_ messages: [NewOutgoingMessage], sender: String) throws(StoreError) -> [StoredMessage] {
        try enqueue(messages, sender: IdentityPublicKey(hex: sender)!)
    }

    func enqueueRoomMessage(
        id: String, room: String, body: String, createdAt: Int64, sender: String,
        members: [String], replyTo: String? = nil, signed: SignedRoomMessageRow? = nil
    ) throws(StoreError) -> StoredMessage {
        try enqueueRoomMessage(
            id: MessageID(hex: id)!, room: RoomID(hex: room)!, body: body, createdAt: createdAt,
            sender: IdentityPublicKey(hex: sender)!, members: members.map { IdentityPublicKey(hex: $0)! },
            replyTo: replyTo.map { MessageID(hex: $0)! }, signed: signed)
    }

    func enqueueRoomMessages(_ messages: [NewRoomMessage], sender: String) throws(StoreError) -> [StoredMessage] {
        try enqueueRoomMessages(messages, sender: IdentityPublicKey(hex: sender)!)
    }

    func storeIncomingRoomMessages(_ messages: [IncomingMessage], room: String, at: Int64) throws(StoreError)
        -> [(message: StoredMessage, isNew: Bool)]
    {
        try storeIncomingRoomMessages(messages, room: RoomID(hex: room)!, at: at)
    }
}

/// Hex fixtures for the cold functions typed in round 13 (read state, history and search
/// scope, conversation actions, signed room-message rows, room read state and outbox).
private func key(_ hex: String) -> IdentityPublicKey { IdentityPublicKey(hex: hex)! }
private func mid(_ hex: String) -> MessageID { MessageID(hex: hex)! }
private func rid(_ hex: String) -> RoomID { RoomID(hex: hex)! }

extension HistoryScope {
    static func peer(_ hex: String) -> HistoryScope { .peer(key(hex)) }
    static func room(_ hex: String) -> HistoryScope { .room(rid(hex)) }
}

extension MessageParty {
    /// A direct peer (64 hex digits) or a room (32).
    static func hex(_ hex: String) -> MessageParty { hex.count == 64 ? .peer(key(hex)) : .room(rid(hex)) }
}

extension NewLocalAction {
    init(
        id: String, peer: String, target: StoredMessage, kind: MessageActionKind, body: String?, createdAt: Int64,
        members: [String] = []
    ) {
        self.init(
            id: mid(id), peer: .hex(peer), target: target, kind: kind, body: body, createdAt: createdAt,
            members: members.map(key))
    }
}

extension IncomingAction {
    init(
        id: String, author: String, sequence: Int64, createdAt: Int64, target: String,
        kind: MessageActionKind, body: String?, room: String? = nil
    ) {
        self.init(
            id: mid(id), author: key(author), sequence: sequence, createdAt: createdAt, target: mid(target),
            kind: kind, body: body, room: room.map(rid))
    }
}

extension Store.SignedRoomMessageRow {
    init(room: String, author: String, sequence: UInt64, id: String, encoded: [UInt8]) {
        self.init(room: rid(room), author: key(author), sequence: sequence, id: mid(id), encoded: encoded)
    }
}

extension Store {
    func messages(peer: String, after cursor: Int64?, before: Int64? = nil, limit: Int) throws(StoreError)
        -> [StoredMessage]
    {
        try messages(peer: key(peer), after: cursor, before: before, limit: limit)
    }

    func actionTargetFacts(_ target: StoredMessage, author: String, reaction: String?) throws(StoreError)
        -> ActionTargetFacts
    {
        try actionTargetFacts(target, author: key(author), reaction: reaction)
    }

    func performLocalAction(_ action: NewLocalAction, me: String, at now: Int64) throws(StoreError) -> StoredMessage {
        try performLocalAction(action, me: key(me), at: now)
    }

    func receiveActions(
        _ actions: [IncomingAction], me: String, at now: Int64, judge: (IncomingAction, ActionTargetFacts?) -> Bool
    ) throws(StoreError) -> [ReceivedActionOutcome] {
        try receiveActions(actions, me: key(me), at: now, judge: judge)
    }

    func pendingActions(to peer: String, limit: Int) throws(StoreError) -> [StoredAction] {
        try pendingActions(to: key(peer), limit: limit)
    }

    func queuedActionCount(to peer: String) throws(StoreError) -> Int {
        try queuedActionCount(to: .hex(peer))
    }

    @discardableResult
    func markActionsDelivered(ids: [String], by peer: String) throws(StoreError) -> Int {
        try markActionsDelivered(ids: ids.map(mid), by: key(peer))
    }

    func actionBodies(target: String, targetAuthor: String) throws(StoreError) -> [String] {
        try actionBodies(target: mid(target), targetAuthor: key(targetAuthor))
    }

    func insertSignedRoomMessage(
        room: String, author: String, sequence: UInt64, id: String, encoded: [UInt8], at: Int64
    ) throws(StoreError) -> SignedRoomMessageInsert {
        try insertSignedRoomMessage(
            room: rid(room), author: key(author), sequence: sequence, id: mid(id), encoded: encoded, at: at)
    }

    func nextRoomSequence(room: String, author: String) throws(StoreError) -> UInt64 {
        try nextRoomSequence(room: rid(room), author: key(author))
    }

    func signedRoomMessages(room: String, author: String, sequences: [UInt64]) throws(StoreError) -> [[UInt8]] {
        try signedRoomMessages(room: rid(room), author: key(author), sequences: sequences)
    }

    func signedRoomMessage(id: String, author: String) throws(StoreError) -> [UInt8]? {
        try signedRoomMessage(id: mid(id), author: key(author))
    }

    func pendingRoomMessages(to member: String, limit: Int) throws(StoreError) -> [StoredMessage] {
        try pendingRoomMessages(to: key(member), limit: limit)
    }

    func markRoomDeliveries(ids: [String], by member: String, at: Int64) throws(StoreError) -> [StoredMessage] {
        try markRoomDeliveries(ids: ids.map(mid), by: key(member), at: at)
    }

    func acknowledgeRoomTraffic(ids: [String], by member: String, at: Int64) throws(StoreError)
        -> RoomDeliveryChange
    {
        try acknowledgeRoomTraffic(ids: ids.map(mid), by: key(member), at: at)
    }

    func markRoomMessagesHeld(
        room: String, author: String, ranges: [ClosedRange<UInt64>], by member: String, at: Int64
    ) throws(StoreError) -> RoomDeliveryChange {
        try markRoomMessagesHeld(room: rid(room), author: key(author), ranges: ranges, by: key(member), at: at)
    }

    func queuedRoomMessageCount(room: String) throws(StoreError) -> Int {
        try queuedRoomMessageCount(room: rid(room))
    }

    func roomMessages(room: String, after cursor: Int64?, before: Int64? = nil, limit: Int) throws(StoreError)
        -> [StoredMessage]
    {
        try roomMessages(room: rid(room), after: cursor, before: before, limit: limit)
    }

    func roomUnreadCount(room: String) throws(StoreError) -> Int {
        try roomUnreadCount(room: rid(room))
    }

    func markRoomRead(room: String, upTo: Int64?, at: Int64) throws(StoreError) -> [String] {
        try markRoomRead(room: rid(room), upTo: upTo, at: at).map(\.hex)
    }
}
