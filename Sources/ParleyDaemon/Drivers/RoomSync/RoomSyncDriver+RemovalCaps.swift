import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Removal caps (features bit 7; docs/PROTOCOL.md "Removal caps"): the cap this node names
/// when it removes a member or leaves. The rule is `RoomRemovalCaps`'s; refusing what
/// arrives above a cap is `RoomEntitlement`'s verdict (RoomSyncDriver+Receive.swift, and
/// the entitlement closure, which never passes such a message on). What this node took
/// before the remove reached it is never withdrawn: a remove's validity can change later
/// (a removed admin's back-dated remove is void once its removal arrives), and a
/// withdrawal cannot be undone; it is marked instead, at read time, against the room as
/// resolved now (`RoomCappedRemovals`, `AfterRemovalMarks`), so the mark is undone by
/// itself.
extension RoomSyncDriver {
    /// The cap for a remove of `target` (or this node's leave) in `state`'s room: the
    /// highest sequence of `target`'s signed messages held, when every other member (joined
    /// or invited) is known to read caps; nil (an uncapped remove) otherwise.
    func removalCapToSign(target: IdentityPublicKey, in state: RoomState) throws(StoreError) -> UInt64? {
        loadSyncingPeers()
        let everyone = state.members.allSatisfy { $0 == me || book.capReaders.contains($0) }
        guard everyone else { return nil }
        let highest = try store.nextRoomSequence(room: state.roomID, author: target) - 1
        return RoomRemovalCaps.capToSign(highestHeld: highest, everyoneReadsCaps: everyone)
    }
}
