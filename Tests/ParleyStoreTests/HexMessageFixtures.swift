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
            id: MessageID(hex: id)!, room: RoomID(hex: room)!, body: body, createdAt: createdAt, members: members,
            replyTo: replyTo.map { MessageID(hex: $0)! }, signed: signed)
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
            sender: IdentityPublicKey(hex: sender)!, members: members, replyTo: replyTo.map { MessageID(hex: $0)! },
            signed: signed)
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
