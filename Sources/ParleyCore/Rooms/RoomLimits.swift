/// Every limit of rooms that a peer (or a local user) can push against, each with its reason.
public enum RoomLimits {
    /// Members of one room, joined or invited: an all-hands room of an office. An author
    /// sends a new message itself to at most `RoomFanOut.directRecipients` members that sync
    /// rooms and history sync carries it to the rest, so a message's cost to any one member
    /// does not grow with this (docs/PROTOCOL.md "Room sync", "Fan-out"). What grows is the
    /// room's operation log (one add and one join per member: `maxOperationsPerRoom` is
    /// what bounds a room's size today, about 160) and the `roomHave` summary (one entry per
    /// author, `RoomHave.maxAuthors` = 1,024 leaves room for 24 authors who left).
    public static let maxMembers = 1_000

    /// Members one create lists (the creator included). Every other member comes by its
    /// own add (one key each), so no operation lists the whole room: a create stays near
    /// 2 KiB (64 keys of 32 bytes), the size a receiver parses and a member forwards.
    public static let maxCreateMembers = 64

    /// Room names follow the display-name rules of cards (1...64 bytes of UTF-8, no control
    /// or bidirectional formatting characters): they are shown to people in the same places.
    public static let maxNameBytes = Card.maxDisplayNameLength

    /// Parents one operation may name. A node names the current heads of the room's
    /// operation graph; more than a few heads only happen with many members acting at the
    /// same moment, and 16 bounds the operation's size (512 bytes of hashes).
    public static let maxParents = 16

    /// Operations stored per room. A node resolves the room again after every new
    /// operation, and resolution is quadratic in the number of operations (each one's
    /// causal past is replayed): 256 keeps one resolution near 65,000 set operations, and a
    /// member flooding the limit costs the others about a second of work in all. It also
    /// bounds a room's size in practice: every member beyond the create's list costs two
    /// operations (its add and its join), so a room reaches about 160 members, not
    /// `maxMembers`, until resolution is incremental (a room of 1,000 needs about 2,000
    /// operations, and resolving 1,000 takes about 30 s in a debug build today). Past 256,
    /// re-create the room.
    public static let maxOperationsPerRoom = 4_096
}
