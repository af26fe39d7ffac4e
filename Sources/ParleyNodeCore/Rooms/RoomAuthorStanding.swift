import ParleyCore

/// Whether a signed room message or change that a member hands over is taken in, by what
/// the person decided about its **author's** key (docs/PROTOCOL.md "Room sync"; CONTROL.md
/// `trust.block`: nothing is stored from a blocked key). A blocked key has no session
/// with this node, so its room traffic can only come passed on by other members: the
/// block must hold on that path too, or a former contact that is still in a room reaches
/// the person through everyone else. Pure: the driver passes the author's standing.
///
/// Only the block refuses. A replaced key is the contact's old key: what it signed in a
/// room is that contact's history there, and hiding it would make others' history
/// disappear. A key held for approval was made a co-member by the room's admins; the hold
/// is about sessions with it. A key never met (nil) is a co-member known only by the room.
/// Room operations are never refused here: every member must resolve the same room.
public enum RoomAuthorStanding {
    public enum Verdict: Sendable, Equatable {
        case take
        /// Acknowledged (final: it is not for this node while the block lasts) and dropped:
        /// not stored, not shown, not passed on. After an unblock, members hand it over
        /// again (this node's summary does not claim it).
        case refuseBlocked
    }

    public static func verdict(author: KnownPeer.Standing?) -> Verdict {
        author == .blocked ? .refuseBlocked : .take
    }
}
