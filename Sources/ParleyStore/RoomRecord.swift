/// A room as this node last resolved it (a cache of what its operations say).
public struct RoomRecord: Sendable, Equatable {
    /// 32 lowercase hex digits (16 random bytes chosen by the creator).
    public var id: String
    /// Hash (hex) of the create operation this node pinned for the room.
    public var root: String
    public var name: String
    /// Identity hex of the creator.
    public var creator: String
    /// Unix ms on the creator's clock.
    public var createdAt: Int64
    /// Highest sequence among the applied operations.
    public var version: Int64
    /// Identity hex of every current member, ascending.
    public var members: [String]
    /// Whether this node is a member (false once it left or was removed).
    public var isMember: Bool
    /// Unix ms of this node's last change to the record.
    public var updatedAt: Int64

    public init(id: String, root: String, name: String, creator: String, createdAt: Int64, version: Int64,
                members: [String], isMember: Bool, updatedAt: Int64) {
        self.id = id
        self.root = root
        self.name = name
        self.creator = creator
        self.createdAt = createdAt
        self.version = version
        self.members = members
        self.isMember = isMember
        self.updatedAt = updatedAt
    }
}

/// A stored room operation: its hash, room, sequence and signed encoding (hex / bytes as
/// on the wire). The store does not interpret it; the node decodes and verifies.
public struct StoredRoomOperation: Sendable, Equatable {
    public var hash: String
    public var room: String
    public var sequence: Int64
    public var encoded: [UInt8]

    public init(hash: String, room: String, sequence: Int64, encoded: [UInt8]) {
        self.hash = hash
        self.room = room
        self.sequence = sequence
        self.encoded = encoded
    }
}
