/// Every limit of rooms that a peer (or a local user) can push against, each with its reason.
public enum RoomLimits {
    /// Members of one room, joined or invited: an all-hands room of an office. An author
    /// sends a new message itself to at most `RoomFanOut.directRecipients` members that sync
    /// rooms and history sync carries it to the rest, so a message's cost to any one member
    /// does not grow with this (docs/PROTOCOL.md "Room sync", "Fan-out"). What grows is the
    /// room's operation log (one add and one join per member: 1,936 operations for 1,000,
    /// within `maxOperationsPerRoom`) and the `roomHave` summary (one entry per author,
    /// `RoomHave.maxAuthors` = 1,024 leaves room for 24 authors who left). Checked in the
    /// state of an add's own past, so adds signed concurrently on old views can each see
    /// room and together pass this; `maxOperationsPerRoom` bounds a room then (the rule,
    /// docs/PROTOCOL.md "Resolving incrementally").
    public static let maxMembers = 1_000

    /// Members one create lists (the creator included). Every other member comes by its
    /// own add (one key each), so no operation lists the whole room: a create stays near
    /// 2 KiB (64 keys of 32 bytes), the size a receiver parses and a member forwards.
    /// (An add listing up to 64 keys would save 921 of a full room's 1,936 operations, not
    /// the joins; it would be a new operation kind that every node before it refuses as
    /// malformed, closing the session, so it would need its own feature bit and would leave
    /// such members' views behind at the first one. With resolution incremental the count
    /// is no longer what limits a room, so adds stay one key each.)
    public static let maxCreateMembers = 64

    /// Room names follow the display-name rules of cards (1...64 bytes of UTF-8, no control
    /// or bidirectional formatting characters): they are shown to people in the same places.
    public static let maxNameBytes = Card.maxDisplayNameLength

    /// Parents one operation may name. A node names the current heads of the room's
    /// operation graph; more than a few heads only happen with many members acting at the
    /// same moment, and 16 bounds the operation's size (512 bytes of hashes).
    public static let maxParents = 16

    /// Operations stored per room: a room of `maxMembers` (1,936 operations), with 2,160 to
    /// spare for people leaving, being re-added and changing roles. What it
    /// bounds is the work of resolving (`RoomResolution`, measured in BENCHMARKS.md row 16,
    /// debug build): an operation decided alone costs its past (n/64 words per parent) and
    /// a scan of what is concurrent with it: at most 231 steps building a room of 1,000,
    /// about 3,500 steps (4 ms) for a fork signed on an old view in a room of 4,096; a
    /// lowering concurrent with what it voids rebuilds the room, about 2.6 million steps
    /// (0.5 s) at 4,096, where the full replay the node ran after every operation before
    /// takes 30 million (16 s); the bit sets of the causal pasts take n²/8 bytes (2 MiB). Until 256 (the limit before incremental
    /// resolution) older nodes follow a room; past it they stop (docs/PROTOCOL.md "Room
    /// size"). Past 4,096, re-create the room.
    public static let maxOperationsPerRoom = 4_096
}
