/// Whether a file sent to a room still goes to one of its recipients (docs/PROTOCOL.md
/// "Files in rooms"). A room file is offered to the room's joined members. One removed
/// since keeps a transfer it accepted while a member (the bytes were meant for it then),
/// but an offer it had not answered is no way in: it is cancelled when the removed member
/// wants it, whenever that is, and not offered again at the next session. Before this
/// decision, a `fileWant` after the removal was served while the same offer was cancelled
/// at the next session: the outcome was the removed member's timing.
///
/// Pure: the driver asks the store whether the peer is still a member and passes the
/// answer, `nil` when the store could not say (then nothing is decided on a guess: the
/// file is neither sent nor cancelled).
public enum RoomFileAccess {
    public enum Verdict: Equatable, Sendable {
        /// Offer or serve it.
        case serve
        /// End the transfer, cancelled with `reason` (told to the peer, recorded here).
        case cancel(reason: String)
        /// The store could not say: do neither now; the question is asked again (the next
        /// session offers it again, the next `fileWant` asks again).
        case hold
    }

    /// The reason a removed member's transfer ends with.
    public static let notMemberReason = "no longer a member of the room"

    /// Whether the recipient's membership decides: only for a room file the recipient has
    /// not answered yet (`answered`: it accepted it, the transfer is running or resumes).
    public static func asksMembership(isRoomFile: Bool, answered: Bool) -> Bool { isRoomFile && !answered }

    /// `isMember`: whether `peer` is still a member of the transfer's room as this node
    /// resolved it, nil if the store could not tell. A file for one peer (no room), or one
    /// the recipient already accepted, is always served.
    public static func outgoing(isRoomFile: Bool, answered: Bool, isMember: Bool?) -> Verdict {
        guard asksMembership(isRoomFile: isRoomFile, answered: answered) else { return .serve }
        switch isMember {
        case .some(true): return .serve
        case .some(false): return .cancel(reason: notMemberReason)
        case .none: return .hold
        }
    }
}
