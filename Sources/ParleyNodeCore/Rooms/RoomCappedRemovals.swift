import ParleyCore

/// The valid capped removes of a room, per target, as the room is resolved now: what
/// decides, at read time, which messages a member already holds were written **after their
/// author's removal** (docs/PROTOCOL.md "Removal caps", "What a member already took").
///
/// A cap refuses a back-dated message on arrival (`RoomRemovalCaps`, `RoomEntitlement`),
/// but a member that took one before the removal reached it holds it. Withdrawing it for
/// good is unsafe: whether a remove is valid can change later (a removed admin's back-dated
/// remove is valid at a lagging member until the admin's own removal arrives, then void),
/// so a permanent withdrawal would let a removed admin erase history. Instead nothing
/// stored changes: a held message is **marked** when the same rule that refuses it on
/// arrival holds for it in the room as resolved now (a valid remove of its author that
/// carries a cap below its sequence and is not in its anchor's past), and the mark goes by
/// itself when that remove turns void, because this value is derived from the valid
/// operations again.
///
/// Small: a room holds few removes. Built once per room state (`RoomBook.Entry`), so
/// judging a message costs a dictionary lookup unless its author has a cap below its
/// sequence.
public struct RoomCappedRemovals: Equatable, Sendable {
    /// One valid remove of a member that carries a cap.
    public struct Remove: Equatable, Hashable, Sendable {
        public let hash: RoomOperationHash
        public let cap: UInt64

        public init(hash: RoomOperationHash, cap: UInt64) {
            self.hash = hash
            self.cap = cap
        }
    }

    /// Per removed member, its valid capped removes (any order, no duplicates).
    public private(set) var removes: [IdentityPublicKey: Set<Remove>] = [:]

    /// None: no member's held message is marked.
    public init() {}

    /// The valid capped removes among `state.applied`. Bounded: a room holds at most
    /// `RoomLimits.maxOperationsPerRoom` operations.
    public init(state: RoomState, operations: [RoomOperationHash: RoomOperation]) {
        for h in state.applied {
            guard let op = operations[h], let cap = op.removalCap, case .remove(let target) = op.change else {
                continue
            }
            removes[target, default: []].insert(Remove(hash: h, cap: cap))
        }
    }

    public var isEmpty: Bool { removes.isEmpty }

    /// The members with a valid capped remove.
    public var authors: Set<IdentityPublicKey> { Set(removes.keys) }

    /// The lowest cap among `author`'s valid capped removes: a message of its at or below
    /// it is never marked, whatever its anchor (nil: none is).
    public func floor(of author: IdentityPublicKey) -> UInt64? {
        removes[author]?.map(\.cap).min()
    }

    /// Whether `author`'s message (or change) `sequence` could be marked: above the floor.
    /// When false, its anchor need not be read.
    public func mayMark(author: IdentityPublicKey, sequence: UInt64) -> Bool {
        guard let floor = floor(of: author) else { return false }
        return sequence > floor
    }

    /// Whether `author`'s message `sequence`, whose anchor's past (the anchor and every
    /// ancestor, `RoomEntitlement.past(of:operations:)`) is `past`, was written after the
    /// author's removal: some valid capped remove of it not in `past` caps it below
    /// `sequence`. The rule of `RoomRemovalCaps`, so a held message is marked exactly when
    /// it would be refused if it arrived now. `past` nil (an anchor operation not held:
    /// never the case for a stored message, whose anchor was held when it was taken) marks
    /// nothing.
    public func isAfterRemoval(author: IdentityPublicKey, sequence: UInt64, past: Set<RoomOperationHash>?) -> Bool {
        guard let past, let theirs = removes[author] else { return false }
        return theirs.contains { !past.contains($0.hash) && sequence > $0.cap }
    }

    /// The members whose marks may differ between `self` and `other` (their capped
    /// removes differ): only their messages need judging again when the room changes.
    public func authorsChanged(from other: RoomCappedRemovals) -> Set<IdentityPublicKey> {
        var out: Set<IdentityPublicKey> = []
        for a in authors.union(other.authors) where removes[a] != other.removes[a] { out.insert(a) }
        return out
    }

    /// The lowest floor of `author` in either: below it, neither marks anything.
    public func floor(of author: IdentityPublicKey, orIn other: RoomCappedRemovals) -> UInt64? {
        switch (floor(of: author), other.floor(of: author)) {
        case let (a?, b?): min(a, b)
        case let (a?, nil): a
        case let (nil, b?): b
        case (nil, nil): nil
        }
    }
}
