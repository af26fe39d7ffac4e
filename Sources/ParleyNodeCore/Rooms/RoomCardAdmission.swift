import ParleyCore

/// What a node does with a member's card passed on through a room (room cards, issue 30;
/// docs/PROTOCOL.md "Room cards"). A peer is its key, never its name: a card learnt this
/// way only gives a name to a key the room already made a co-member; it never changes what
/// the node holds of a peer it already knows (a contact's name, a nickname, a verification,
/// a block all stay), and the name is not verified by anyone (it is what that member calls
/// itself, like a first handshake's card). Pure: the caller has decoded and verified the card.
public enum RoomCardAdmission {
    public enum Verdict: Sendable, Equatable {
        /// Keep the card as the subject's name, pinned on first use (or held for approval,
        /// as the trust policy says for a new identity).
        case learn
        /// The subject is not (yet) a joined member in this node's view (the operation that
        /// makes it one may still be waiting for a parent), or this node is only invited
        /// (it keeps nothing of an invitation before its person accepts). Held in memory,
        /// bounded, and judged again when the room changes.
        case hold
        /// Not taken (why, for the log).
        case refuse(Refusal)
    }

    public enum Refusal: Sendable, Equatable {
        /// This node is not a joined member of the room (never joined, left, or removed).
        case notForUs
        /// The member that passed it on is not a joined member (a stranger, or a removed member).
        case senderNotMember
        /// A card of this node's own key: only this node issues those.
        case ownKey
        /// The key is already known (pinned, verified, held, blocked or replaced): its own
        /// sessions update its card, a room never does.
        case alreadyKnown
    }

    public static func judge(
        subject: IdentityPublicKey, room state: RoomState?, me: IdentityPublicKey, sender: IdentityPublicKey,
        known: Bool
    ) -> Verdict {
        guard let state, state.isMember(me) else { return .refuse(.notForUs) }
        // Invited, not joined: an invitation is anyone's to send, with any keys and names
        // in it, so nothing it carries is kept before the person accepts; the cards wait
        // (the operations that carried them do not come again after the join).
        guard state.hasJoined(me) else { return .hold }
        guard state.hasJoined(sender) else { return .refuse(.senderNotMember) }
        guard subject != me else { return .refuse(.ownKey) }
        guard !known else { return .refuse(.alreadyKnown) }
        return state.hasJoined(subject) ? .learn : .hold
    }
}

/// Bounds of room cards (docs/PROTOCOL.md "Room cards").
public enum RoomCardLimits {
    /// Cards held in memory, in all, while this node is invited (until its person accepts)
    /// or while the operation that makes their subject a member is on its way: one room's
    /// members (`RoomLimits.maxMembers`) and some, about 400 KiB. The oldest is dropped past
    /// it (a card is only a name: the member's own session brings it again).
    public static let maxHeld = 1_024
    /// Cards that do not verify on one session before it is closed with `protocolError`:
    /// one damaged copy is not an attack, a stream of them is.
    public static let maxBadPerSession = 16
    /// Cards read per session: above every member of a room (`RoomLimits.maxMembers`), so
    /// a member's whole log for a newcomer fits; the rest of a session's cards are ignored
    /// (each costs a signature check and may write a peer record).
    public static let maxPerSession = 2_048
}
