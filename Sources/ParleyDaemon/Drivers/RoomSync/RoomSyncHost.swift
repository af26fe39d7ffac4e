import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What room sync needs from the rest of the node: sessions to write to, the rooms as
/// this node resolved them, the receive quota for what members hand over, the
/// conversation rules for signed changes, and the observers. `Node` is the host
/// (Node+RoomSync.swift); `RoomSyncDriverTests` stands in for it.
protocol RoomSyncHost: AnyObject {
    associatedtype Link: MessageLink

    // Sessions (`SessionDriver`).
    /// The peer of `link` if `link` carries its session.
    func activePeer(of link: Link) -> IdentityPublicKey?
    func activeConnection(for peer: IdentityPublicKey) -> Link?
    /// Sends what is queued for the peer of `link` (room operations queued in answer to an
    /// operation summary).
    func pump(_ link: Link)

    // Rooms (`RoomBook`, Node+Rooms.swift).
    /// `room`'s operations and resolved state (nil until its root is known), as this
    /// node holds them.
    func roomForSync(_ room: RoomID) throws(StoreError)
        -> (state: RoomState?, operations: [RoomOperationHash: RoomOperation])

    // Trust (`PeerDirectory`).
    /// What the person decided about `author`'s key (nil: a key this node never pinned),
    /// for `RoomAuthorStanding`.
    func authorStanding(_ author: IdentityPublicKey) -> KnownPeer.Standing?

    // The receive quota (Node+Quota.swift): a signed message counts against its author's.
    /// Throws when the store cannot count: then none of the read is stored or acknowledged.
    func judgeByQuota(_ chats: [RoomChatRecord], from author: IdentityPublicKey) throws(StoreError)
        -> (store: [RoomChatRecord], refused: [(RefusalReason, [MessageID])])
    /// Signed edits, deletes and reactions, by their author's quota (each is a row kept:
    /// one message, its text's bytes). Returns the refused, by reason; throws as above.
    func judgeActionsByQuota(_ actions: [(id: MessageID, size: Int)], from author: IdentityPublicKey)
        throws(StoreError) -> [(RefusalReason, [MessageID])]
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: Link)
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey)

    // Conversation (Node+Conversation.swift).
    /// `ConversationRules.judge` on what the store knows of a change's target.
    func judgeChange(
        _ action: MessageActionRecord.Action, sequence: Int64, from author: IdentityPublicKey, room: RoomID?,
        roomAccepts: Bool, facts: ActionTargetFacts?
    ) -> ActionVerdict
    /// A signed delete was applied: the search index owes a purge (`MessageDriver`).
    func roomMessageDeleted()

    /// Tells the observers (the control side).
    func emit(_ e: NodeEvent)
}
