import ParleyCore

/// The reads that judge which held room messages were written after their author's removal
/// (`AfterRemovalMarks`; docs/PROTOCOL.md "Removal caps"): the signed copy of a message or
/// a reaction's change (its anchor), and the few messages and reactions above a removed
/// member's cap. Read only: nothing stored is changed by a mark. One small protocol per
/// concern, as libsignal's storage traits are.
public protocol AfterRemovalStore: AnyObject {
    func signedRoomMessage(id: MessageID, author: IdentityPublicKey) throws(StoreError) -> [UInt8]?
    func signedRoomMessages(room: RoomID, author: IdentityPublicKey, sequences: [UInt64]) throws(StoreError)
        -> [[UInt8]]
    func incomingRoomMessages(room: RoomID, from author: IdentityPublicKey, above sequence: Int64, limit: Int)
        throws(StoreError) -> [StoredMessage]
    func roomMessagesReacted(room: RoomID, by reactor: IdentityPublicKey, above sequence: Int64, limit: Int)
        throws(StoreError) -> [StoredMessage]
}

extension Store: AfterRemovalStore {}
