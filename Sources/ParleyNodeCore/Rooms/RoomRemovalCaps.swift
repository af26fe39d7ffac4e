import ParleyCore

/// Removal caps (features bit 7; docs/PROTOCOL.md "Removal caps", docs/ROOM-SYNC.md
/// section 3). A remove (or leave) may name the highest `roomSequence` of its target that
/// the remover accepted: its **cap**. Without it, a removed member could sign a new message
/// anchored before its removal and every member would judge it there, where it was a
/// member; a member that had not yet received the removal would take it and pass it on.
///
/// The rule, a function of the room's valid operations and the message alone (so every
/// member that holds the same operations decides the same, whatever the arrival order): a
/// message by author A with sequence s, anchored at `anchor`, is **beyond a cap** when some
/// *valid* remove of A with a cap c is **not** in the anchor's past (its author wrote as if
/// it had not seen the removal) and s > c. A remove in the anchor's past does not cap: the
/// author had seen it, so the message was written after a re-add (or A was not a member
/// there and the message is refused as `authorNotMember` anyway). Several removals of A
/// outside the past: the lowest cap binds (each alone would refuse the message). A remove
/// without a cap (older nodes, stores from before the field) limits nothing.
public enum RoomRemovalCaps {
    /// For each author, the lowest cap among the valid capped removes of it that are not in
    /// `past` (the anchor and its ancestors). Empty when the room holds no capped remove.
    public static func caps(
        outside past: Set<RoomOperationHash>, state: RoomState, operations: [RoomOperationHash: RoomOperation]
    ) -> [IdentityPublicKey: UInt64] {
        var caps: [IdentityPublicKey: UInt64] = [:]
        // Bounded: a room holds at most `RoomLimits.maxOperationsPerRoom` valid operations.
        for h in state.applied where !past.contains(h) {
            guard let op = operations[h], let cap = op.removalCap, case .remove(let target) = op.change else {
                continue
            }
            caps[target] = min(caps[target] ?? cap, cap)
        }
        return caps
    }

    /// Whether `author`'s message `sequence` is within the caps that apply at its place.
    public static func admits(author: IdentityPublicKey, sequence: UInt64, caps: [IdentityPublicKey: UInt64]) -> Bool {
        guard let cap = caps[author] else { return true }
        return sequence <= cap
    }

    /// The cap a node names when it signs a remove of `target` (or its own leave): the
    /// highest `roomSequence` of the target's signed room messages it holds in the room,
    /// holes or not (`highestHeld`, 0 when it holds none). Not the top of the first
    /// contiguous range: a message below one the remover holds was signed before it, so it
    /// is no back-dated write, only one still on its way; with the contiguous top, every
    /// such message would be lost to the room. Nil (no cap) unless every other member of
    /// the room is known to read caps (`everyoneReadsCaps`): an older node cannot decode a
    /// capped remove, so it would never learn of the removal.
    public static func capToSign(highestHeld: UInt64, everyoneReadsCaps: Bool) -> UInt64? {
        everyoneReadsCaps ? highestHeld : nil
    }
}
