/// Whether a file sent to a room still goes to one of its recipients (docs/PROTOCOL.md
/// "Files"). A room file is offered to the room's joined members; one removed (or gone)
/// since then must not get it by answering the old offer, wanting it later, or resuming it
/// at the next session: a removed member is a former member, not a recipient.
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

    /// `isMember`: whether `peer` is still a member of the transfer's room as this node
    /// resolved it, nil if the store could not tell. A file for one peer (no room) is
    /// always served.
    public static func outgoing(room isRoomFile: Bool, isMember: Bool?) -> Verdict {
        guard isRoomFile else { return .serve }
        switch isMember {
        case .some(true): return .serve
        case .some(false): return .cancel(reason: notMemberReason)
        case .none: return .hold
        }
    }
}
