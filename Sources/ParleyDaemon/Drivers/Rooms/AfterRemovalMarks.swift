import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Messages written after their author's removal (docs/PROTOCOL.md "Removal caps", "What a
/// member already took"): a removed member writing on, back-dated, reaches a member before
/// its removal does; that member took it. Nothing stored is changed (a withdrawal could not
/// be undone, and a remove's validity can change later): the message is **marked** in every
/// view (`MessageRoom.afterRemoval`), left out of unread counts, and its reactions of the
/// removed author are not shown, exactly while the room as resolved now holds a valid
/// capped remove that refuses it (`RoomCappedRemovals`). When that changes (a remove
/// arrives, or turns void), the messages whose mark changed are shown again
/// (`message.updated`).
///
/// Built on demand from the node's fields (`Node.afterRemovalMarks`), so it holds no state
/// of its own: it reads the store only as `AfterRemovalStore`, the room's entry through
/// `roomEntry` (`RoomDriver.entry`, the rooms as resolved now), and tells the observers
/// through `emit`.
struct AfterRemovalMarks {
    let store: any AfterRemovalStore
    /// The room's operations and capped removes, as resolved now.
    let roomEntry: (RoomID) throws(StoreError) -> RoomBook.Entry
    /// Tells the observers (the control side).
    let emit: (NodeEvent) -> Void
    let log: Logger

    /// Messages judged again per removed member when the room's capped removes change, and
    /// per member counted for a room's unread count: a removed member's messages above its
    /// cap were taken before the removal arrived, bounded by its receive quota; beyond this
    /// many, the rest keep the mark they had in the open view until it is read again.
    static let maxJudged = 10_000

    /// Whether `m`, a stored message of `entry`'s room, is shown as written after its
    /// author's removal. Costs one dictionary lookup unless its author has a valid capped
    /// remove below its sequence.
    func isAfterRemoval(_ m: StoredMessage, in entry: RoomBook.Entry) -> Bool {
        guard m.direction == .incoming, m.sequence > 0,
            entry.cappedRemovals.mayMark(author: m.sender, sequence: UInt64(m.sequence))
        else { return false }
        var pasts: [[RoomOperationHash]: Set<RoomOperationHash>?] = [:]
        return isAfterRemoval(m, caps: entry.cappedRemovals, operations: entry.operations, pasts: &pasts)
    }

    /// The rule for one message against `caps`, its anchor read from its signed copy (an
    /// unsigned room message, from a node without room sync, has none: never marked).
    /// `pasts` keeps each anchor's past for the caller's batch.
    private func isAfterRemoval(
        _ m: StoredMessage, caps: RoomCappedRemovals, operations: [RoomOperationHash: RoomOperation],
        pasts: inout [[RoomOperationHash]: Set<RoomOperationHash>?]
    ) -> Bool {
        guard m.sequence > 0, caps.mayMark(author: m.sender, sequence: UInt64(m.sequence)),
            let bytes = try? store.signedRoomMessage(id: m.id, author: m.sender),
            let signed = try? SignedRoomMessage.decode(bytes), signed.roomID == m.room
        else { return false }
        if pasts[signed.anchor] == nil {
            pasts[signed.anchor] = .some(RoomEntitlement.past(of: signed.anchor, operations: operations))
        }
        return caps.isAfterRemoval(author: m.sender, sequence: signed.roomSequence, past: pasts[signed.anchor] ?? nil)
    }

    /// Whether `reactor`'s reaction with sequence `sequence` in `room` was written after the
    /// reactor's removal (the same rule, for its signed change): not shown.
    func isReactionAfterRemoval(room: RoomID, reactor: IdentityPublicKey, sequence: Int64) -> Bool {
        guard sequence > 0, let entry = try? roomEntry(room),
            entry.cappedRemovals.mayMark(author: reactor, sequence: UInt64(sequence)),
            let bytes = try? store.signedRoomMessages(room: room, author: reactor, sequences: [UInt64(sequence)]).first,
            let signed = try? SignedRoomMessage.decode(bytes)
        else { return false }
        let past = RoomEntitlement.past(of: signed.anchor, operations: entry.operations)
        return entry.cappedRemovals.isAfterRemoval(author: reactor, sequence: signed.roomSequence, past: past)
    }

    /// The room's unread incoming messages that are marked (left out of `unread`).
    func unread(in room: RoomID) -> Int {
        guard let entry = try? roomEntry(room), !entry.cappedRemovals.isEmpty else { return 0 }
        var pasts: [[RoomOperationHash]: Set<RoomOperationHash>?] = [:]
        var count = 0
        for author in entry.cappedRemovals.authors {
            guard let floor = entry.cappedRemovals.floor(of: author),
                let held = try? store.incomingRoomMessages(
                    room: room, from: author, above: Int64(clamping: floor), limit: Self.maxJudged)
            else { continue }
            for m in held where m.readAt == nil {
                if isAfterRemoval(m, caps: entry.cappedRemovals, operations: entry.operations, pasts: &pasts) {
                    count += 1
                }
            }
        }
        return count
    }

    /// The room's valid capped removes changed: every held message whose mark differs
    /// between `old` and `new` is shown again (`message.updated`, with the mark as it is now).
    func cappedRemovalsChanged(_ room: RoomID, from old: RoomCappedRemovals, to new: RoomCappedRemovals) {
        guard let entry = try? roomEntry(room) else { return }
        var pasts: [[RoomOperationHash]: Set<RoomOperationHash>?] = [:]
        var changed = 0
        for author in new.authorsChanged(from: old) {
            guard let floor = new.floor(of: author, orIn: old) else { continue }
            let held: [StoredMessage]
            do {
                held = try store.incomingRoomMessages(
                    room: room, from: author, above: Int64(clamping: floor), limit: Self.maxJudged)
            } catch {
                log.error(
                    "could not read the messages a removal marks; they show their new mark once read again",
                    ["room": room.hex, "error": "\(error)"])
                continue
            }
            var shown: Set<Int64> = []
            for m in held {
                let was = isAfterRemoval(m, caps: old, operations: entry.operations, pasts: &pasts)
                let now = isAfterRemoval(m, caps: new, operations: entry.operations, pasts: &pasts)
                guard was != now else { continue }
                changed += 1
                shown.insert(m.rowID)
                emit(.messageUpdated(m))
            }
            // Its reactions (shown or hidden by the same rule) on any message of the room.
            // Each is judged by its change's anchor only in the view; here, a message with
            // one of its reactions above the lowest cap is simply shown again.
            let reacted =
                (try? store.roomMessagesReacted(
                    room: room, by: author, above: Int64(clamping: floor), limit: Self.maxJudged)) ?? []
            for m in reacted where !shown.contains(m.rowID) {
                changed += 1
                emit(.messageUpdated(m))
            }
        }
        if changed > 0 {
            log.info(
                "messages written after their author's removal marked again (a removal arrived or turned void)",
                ["room": room.hex, "changed": "\(changed)"])
        }
    }
}
