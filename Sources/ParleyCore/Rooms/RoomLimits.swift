/// Every limit of rooms that a peer (or a local user) can push against, each with its reason.
public enum RoomLimits {
    /// Members of one room. A room message is sealed and queued once per member, so the
    /// fan-out cost of every message grows with this; 64 covers an office floor or a lab,
    /// and keeps a create operation (64 keys of 32 bytes) near 2 KiB.
    public static let maxMembers = 64

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
    /// member flooding the limit costs the others about a second of work in all. An office
    /// room sees a few dozen membership changes in its life; past 256, re-create it.
    public static let maxOperationsPerRoom = 256
}
