import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the room driver needs from the rest of the node: the sessions to write to, the
/// receive quota, room sync's entry points (Node+RoomSync.swift, which routes them to
/// `RoomSyncDriver`, the owner of sync's state), the pinned peers a room
/// card may add to, the observers and the security log. `Node` is the host
/// (Node+Rooms.swift); a test stands in for it (`RoomDriverTests`).
protocol RoomHost: AnyObject {
    associatedtype Link: MessageLink

    // Sessions (`SessionDriver`).
    /// The peer of `link` if `link` carries its session (records on any other are ignored).
    func activePeer(of link: Link) -> IdentityPublicKey?
    func activeConnection(for peer: IdentityPublicKey) -> Link?
    /// Runs `body` on the send window of `link`'s session; nil if there is none.
    func withWindow<R>(of link: Link, _ body: (inout SendWindow) -> R) -> R?
    /// A message was exchanged with `peer`: not a stranger any more (eviction order).
    func promote(_ peer: IdentityPublicKey)
    /// Pumps every lane of `link`'s session (something was queued for its peer).
    func pump(_ link: Link)

    // The receive quota (Node+Quota.swift): room chats count against their author's.
    func judgeByQuota(_ chats: [RoomChatRecord], from sender: IdentityPublicKey) throws(StoreError)
        -> (store: [RoomChatRecord], refused: [(RefusalReason, [MessageID])])
    func sendRefusals(_ refused: [(RefusalReason, [MessageID])], on link: Link)
    func quotaStored(_ bodies: [Int], from sender: IdentityPublicKey)

    // Room sync (Node+RoomSync.swift routes these to `RoomSyncDriver`).
    /// The room's membership changed (sync stops with members no longer joined).
    func roomSyncMembershipChanged(_ state: RoomState)
    /// The cap to sign into a remove of `target` (or this node's leave): nil for an
    /// uncapped remove (`RoomRemovalCaps`, docs/PROTOCOL.md "Removal caps").
    func roomRemovalCapToSign(target: IdentityPublicKey, in state: RoomState) throws(StoreError) -> UInt64?
    /// The room's valid capped removes changed (a remove arrived, or one turned void): the
    /// held messages whose "after removal" mark changed are shown again
    /// (`AfterRemovalMarks`, Drivers/Rooms/AfterRemovalMarks.swift).
    func roomCappedRemovalsChanged(_ room: RoomID, from old: RoomCappedRemovals, to new: RoomCappedRemovals)
    /// Narrows who a new operation is queued for (`RoomOperationFanOut`).
    func boundedOperationPlan(
        _ plan: RoomDistribution.OperationPlan, for op: RoomOperation, after: RoomState
    ) -> RoomDistribution.OperationPlan
    /// Who this node sends its own room message to itself (`RoomFanOut`).
    func roomMessageRecipients(_ state: RoomState) -> [IdentityPublicKey]
    func signRoomMessage(
        id: MessageID, room: RoomID, sequence: UInt64, state: RoomState, body: String, createdAt: Int64,
        replyTo: MessageID?
    ) -> SignedRoomMessage?
    func roomSyncStoredOwn(_ m: SignedRoomMessage, queuedFor recipients: [IdentityPublicKey])
    func signedRoomMessageForSending(_ m: StoredMessage, to peer: IdentityPublicKey) -> SignedRoomMessage?
    func roomDeliveryChanged(_ change: RoomDeliveryChange)
    func receivedSignedRoomMessages(
        _ arrivals: [RoomMessageArrival], from peer: IdentityPublicKey, on link: Link
    ) throws(StoreError) -> (acks: [MessageID], shown: [StoredMessage])
    func receivedRoomHave(_ have: RoomHave, from peer: IdentityPublicKey)
    func receivedRoomOperationsHave(_ have: RoomOperationsHave, from peer: IdentityPublicKey, on link: Link)
        throws(StoreError)

    // Pinned peers (`PeerDirectory`): room cards pass on and learn them.
    func peerRecord(_ identity: IdentityPublicKey) -> PeerRecord?
    func upsertPeer(_ rec: PeerRecord) throws(StoreError)
    func nameClash(of identity: IdentityPublicKey) -> NameClashes.Clash?
    /// This node's card as it is now (re-issued when its name or Noise key changes).
    func currentCard() -> Card

    /// Tells the observers (the control side).
    func emit(_ e: NodeEvent)
    /// What a hostile or broken peer can cause, logged once per key per interval
    /// (`Node.attackLog`).
    func logAttack(key: String, _ message: String, _ fields: [String: String])
}
