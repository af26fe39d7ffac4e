import ParleyCore

/// This node's relation to a room.
public enum RoomStatus: String, Sendable, Equatable {
    /// It accepted: sends, receives and forwards the room's traffic.
    case joined
    /// An unanswered invitation: the room's operations are kept, nothing else.
    case invited
    /// It left, declined or was removed.
    case left
    /// A version-1 room kept as history (docs/PROTOCOL.md, "Migration of version-1 rooms").
    case retired
}

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
    /// Whether this node is a joined member (false while invited, once it left or was removed).
    public var isMember: Bool { status == .joined }
    public var status: RoomStatus
    /// Each member's role (identity hex → role).
    public var roles: [String: RoomRole]
    /// Members that accepted (identity hex), ascending; the others are invited.
    public var joined: [String]
    /// The room's policy: only admins and owners may add members.
    public var onlyAdminsAdd: Bool
    /// Identity hex of the peer that delivered the invitation (invited rooms).
    public var inviter: String?
    /// Unix ms of this node's last change to the record.
    public var updatedAt: Int64

    public init(
        id: String, root: String, name: String, creator: String, createdAt: Int64, version: Int64,
        members: [String], status: RoomStatus, roles: [String: RoomRole] = [:], joined: [String]? = nil,
        onlyAdminsAdd: Bool = false, inviter: String? = nil, updatedAt: Int64
    ) {
        self.status = status
        self.roles = roles
        self.joined = joined ?? members
        self.onlyAdminsAdd = onlyAdminsAdd
        self.inviter = inviter
        self.id = id
        self.root = root
        self.name = name
        self.creator = creator
        self.createdAt = createdAt
        self.version = version
        self.members = members
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
