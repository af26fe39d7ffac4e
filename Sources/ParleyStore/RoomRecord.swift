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
    /// The room's id (the table keeps it as 32 lowercase hex digits).
    public var id: RoomID
    /// Hash of the create operation this node pinned for the room.
    public var root: RoomOperationHash
    public var name: String
    /// The creator's identity.
    public var creator: IdentityPublicKey
    /// Unix ms on the creator's clock.
    public var createdAt: Int64
    /// Highest sequence among the applied operations.
    public var version: Int64
    /// Every current member, ascending (byte order, the same as their hex's).
    public var members: [IdentityPublicKey]
    /// Whether this node is a joined member (false while invited, once it left or was removed).
    public var isMember: Bool { status == .joined }
    public var status: RoomStatus
    /// Each member's role.
    public var roles: [IdentityPublicKey: RoomRole]
    /// Members that accepted, ascending; the others are invited.
    public var joined: [IdentityPublicKey]
    /// The room's policy: only admins and owners may add members.
    public var onlyAdminsAdd: Bool
    /// The peer that delivered the invitation (invited rooms).
    public var inviter: IdentityPublicKey?
    /// Unix ms of this node's last change to the record.
    public var updatedAt: Int64

    public init(
        id: RoomID, root: RoomOperationHash, name: String, creator: IdentityPublicKey, createdAt: Int64,
        version: Int64, members: [IdentityPublicKey], status: RoomStatus, roles: [IdentityPublicKey: RoomRole] = [:],
        joined: [IdentityPublicKey]? = nil, onlyAdminsAdd: Bool = false, inviter: IdentityPublicKey? = nil,
        updatedAt: Int64
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

/// A stored room operation: its hash, room, sequence and signed encoding (bytes as on the
/// wire). The store does not interpret it; the node decodes and verifies.
public struct StoredRoomOperation: Sendable, Equatable {
    public var hash: RoomOperationHash
    public var room: RoomID
    public var sequence: Int64
    public var encoded: [UInt8]

    public init(hash: RoomOperationHash, room: RoomID, sequence: Int64, encoded: [UInt8]) {
        self.hash = hash
        self.room = room
        self.sequence = sequence
        self.encoded = encoded
    }
}
