import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Removal caps (features bit 7; docs/PROTOCOL.md "Removal caps"): the cap this node names
/// when it removes a member or leaves, and the messages a cap withdraws once the remove
/// that names it is held. The rule is `RoomRemovalCaps`'s; refusing what arrives above a
/// cap is `RoomEntitlement`'s verdict (RoomSyncDriver+Receive.swift, and the entitlement
/// closure, which never pushes such a message).
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

    /// A capped remove was stored in `state`'s room: the messages it (or any cap of the
    /// room) refuses, already shown here, are withdrawn (a tombstone, as a delete for
    /// everyone, and `message.updated`), so every member ends with the same history
    /// whatever order the removal and the back-dated messages arrived in. Their signed
    /// rows stay (what is held is not taken again); the entitlement rule keeps them from
    /// being passed on.
    func withdrawBeyondCaps(_ state: RoomState) {
        guard let host else { return }
        do {
            let entry = try host.roomForSync(state.roomID)
            guard let current = entry.state else { return }
            var capped: Set<IdentityPublicKey> = []
            var lowest: [IdentityPublicKey: UInt64] = [:]
            for h in current.applied {
                guard let op = entry.operations[h], let cap = op.removalCap, case .remove(let target) = op.change
                else { continue }
                capped.insert(target)
                lowest[target] = min(lowest[target] ?? cap, cap)
            }
            var places: [[RoomOperationHash]: RoomEntitlement.Place?] = [:]
            var withdrawn: [StoredMessage] = []
            for author in capped.sorted() {
                // Only messages above the lowest cap can be refused by one.
                let rows = try store.signedRoomMessages(
                    room: current.roomID, author: author, above: lowest[author] ?? 0)
                var ids: [MessageID] = []
                for bytes in rows {
                    // Changes (edits, deletes, reactions) above a cap are refused when they
                    // arrive; one already applied stays (not undone: docs/PROTOCOL.md).
                    guard let m = try? SignedRoomMessage.decode(bytes), !m.kind.isChange else { continue }
                    if places[m.anchor] == nil {
                        places[m.anchor] = .some(
                            RoomEntitlement.place(at: m.anchor, state: current, operations: entry.operations))
                    }
                    guard let place = places[m.anchor] ?? nil else { continue }
                    if !RoomRemovalCaps.admits(author: author, sequence: m.roomSequence, caps: place.caps) {
                        ids.append(m.id)
                    }
                }
                let gone = try store.withdrawRoomMessages(room: current.roomID, author: author, ids: ids, at: nowMs)
                if !gone.isEmpty {
                    attackLog.log(
                        key: "room-cap-withdrawn:" + author.hex,
                        "room messages above their author's removal cap withdrawn (written after the removal, anchored before it)",
                        [
                            "room": current.roomID.hex, "author": author.fingerprintText, "count": "\(gone.count)"
                        ])
                }
                withdrawn += gone
            }
            guard !withdrawn.isEmpty else { return }
            host.roomMessageDeleted()
            for m in withdrawn { host.emit(.messageUpdated(m)) }
        } catch {
            log.error(
                "could not withdraw room messages above a removal cap; done at the next removal",
                ["room": state.roomID.hex, "error": "\(error)"])
        }
    }
}
