import ParleyCore

/// Who is entitled to a signed room message (issue 30; docs/PROTOCOL.md "Room sync",
/// "Who gets which message"). Pure: the room as resolved now, its operations, the message.
///
/// The message's **place** is its anchor: the room's operation heads when its author
/// wrote. The **membership at that place** is the fold of the *valid* operations (as
/// resolved now, by the room rule) that are the anchor or in the anchor's past. Then:
///
/// - the author must be a joined member there (it could write to the room);
/// - a member M is entitled when M is a joined member now (a removed member gets nothing
///   from anyone who knows of its removal, old or new: no member hands history to a former
///   member) **and** either M is a member there, joined or invited (the author wrote for the
///   people it had invited: "welcome!" right after `rooms.create` reaches them once they
///   accept, as a Matrix room's `invited` visibility does), or the room's policy *there*
///   shares history with new members (`Policy.sharedHistory`). By default a member added
///   later gets nothing from before its join (Signal's rule, Matrix's `joined`); with the
///   setting on, it gets what was written while the setting was on (Matrix's `shared`).
///   Judged at the message's place, so switching the setting on later never opens what
///   was written while it was off.
///
/// What an author sends to a removed member itself cannot be stopped (the author can always
/// leak what it writes); what this rule guarantees is that no *other* member does.
public enum RoomEntitlement {
    public enum Verdict: Equatable, Sendable {
        /// The member may have it: store / pass it on.
        case entitled
        /// An anchor hash names an operation this node does not hold (yet): the operations
        /// may still be on their way. Hold it, unacknowledged, bounded.
        case anchorUnknown
        /// The author was not a joined member at the message's place: it had no right to
        /// write it. Final (the anchor's past does not change).
        case authorNotMember
        /// The member was not a member (joined or invited) at the message's place, or is not a
        /// joined member now.
        case notEntitled
        /// The author was removed (or left) by a valid remove that is not in the message's
        /// past and caps the author below this message's sequence (`RoomRemovalCaps`): a
        /// write back-dated past the author's removal. Nobody stores or passes it on. Final.
        case beyondRemovalCap
    }

    /// The anchor and its past (every ancestor). Nil when an anchor hash is not among
    /// `operations` (which holds the create too).
    public static func past(of anchor: [RoomOperationHash], operations: [RoomOperationHash: RoomOperation])
        -> Set<RoomOperationHash>?
    {
        var closure: Set<RoomOperationHash> = []
        var stack: [RoomOperationHash] = []
        for h in anchor {
            guard operations[h] != nil else { return nil }
            stack.append(h)
        }
        // Bounded: every operation is visited once, and a room holds at most
        // `RoomLimits.maxOperationsPerRoom`.
        while let h = stack.popLast() {
            guard closure.insert(h).inserted, let op = operations[h] else { continue }
            stack += op.parents
        }
        return closure
    }

    /// The membership at `anchor`: valid operations among the anchor and its past, folded in
    /// (sequence, hash) order. Nil when an anchor hash is not among `operations` (which holds the create too).
    public static func membership(
        at anchor: [RoomOperationHash], state: RoomState, operations: [RoomOperationHash: RoomOperation]
    ) -> RoomFold? {
        guard let closure = past(of: anchor, operations: operations) else { return nil }
        return fold(closure, state: state, operations: operations)
    }

    private static func fold(
        _ closure: Set<RoomOperationHash>, state: RoomState, operations: [RoomOperationHash: RoomOperation]
    ) -> RoomFold {
        let valid = Set(state.applied)
        let ordered = closure.filter { valid.contains($0) }.compactMap { operations[$0] }
            .sorted(by: RoomResolver.precedes)
        var fold = RoomFold()
        for op in ordered { fold.apply(op) }
        return fold
    }

    /// What a message's place decides: the membership there, and the removal caps that
    /// apply to messages anchored there (`RoomRemovalCaps`).
    public struct Place: Sendable {
        public let membership: RoomFold
        public let caps: [IdentityPublicKey: UInt64]
    }

    /// The place at `anchor`; nil when an anchor hash is not held.
    public static func place(
        at anchor: [RoomOperationHash], state: RoomState, operations: [RoomOperationHash: RoomOperation]
    ) -> Place? {
        guard let closure = past(of: anchor, operations: operations) else { return nil }
        return Place(
            membership: fold(closure, state: state, operations: operations),
            caps: RoomRemovalCaps.caps(outside: closure, state: state, operations: operations))
    }

    /// May `member` have `author`'s message `sequence` at `place` (nil: unknown)? The
    /// membership rule (`verdict(author:membershipThen:for:state:)`), then the removal caps:
    /// a message above a cap that applies at its place is `beyondRemovalCap`, for every member.
    public static func verdict(
        author: IdentityPublicKey, sequence: UInt64, place: Place?, for member: IdentityPublicKey, state: RoomState
    ) -> Verdict {
        guard let place else { return .anchorUnknown }
        let byMembership = verdict(author: author, membershipThen: place.membership, for: member, state: state)
        guard byMembership != .anchorUnknown, byMembership != .authorNotMember else { return byMembership }
        guard RoomRemovalCaps.admits(author: author, sequence: sequence, caps: place.caps) else {
            return .beyondRemovalCap
        }
        return byMembership
    }

    /// May `member` have `message` (anchor and author as signed), in the room as resolved now?
    public static func verdict(
        author: IdentityPublicKey, anchor: [RoomOperationHash], for member: IdentityPublicKey,
        state: RoomState, operations: [RoomOperationHash: RoomOperation]
    ) -> Verdict {
        verdict(
            author: author, membershipThen: membership(at: anchor, state: state, operations: operations),
            for: member, state: state)
    }

    /// The same from the membership at the anchor (`membership(at:)`, nil: unknown), for a
    /// caller that judges many messages with one anchor (a catch-up of thousands).
    public static func verdict(
        author: IdentityPublicKey, membershipThen then: RoomFold?, for member: IdentityPublicKey, state: RoomState
    ) -> Verdict {
        guard let then else { return .anchorUnknown }
        guard then.joined.contains(author) else { return .authorNotMember }
        guard state.hasJoined(member) else { return .notEntitled }
        // `roles` holds the joined and the invited members at the anchor.
        return then.roles[member] != nil || then.policy.sharedHistory ? .entitled : .notEntitled
    }
}
