/// `rooms.list`, `rooms.create`, `rooms.add`, `rooms.remove`, `rooms.leave`,
/// `rooms.accept`, `rooms.decline`, `rooms.set_role`, `rooms.rename`, `rooms.set_policy`.
///
/// A ROOM selector is `#name`, `name`, or an id prefix of at least 4 hex digits (the `#`
/// is optional here; in `messages.send` / `messages.list` / `messages.subscribe` it is what
/// tells a room from a peer).

/// `rooms.list` takes no params.
public struct RoomsListParams: ControlCallParams {
    public typealias ResultType = RoomsListResult
    public static let method = ControlMethod.roomsList
    public static let fieldNames: [String] = []
    public init() {}
}

public struct RoomsListResult: Codable, Sendable, Hashable {
    /// By name, then id; rooms this node left are included with `member: false`.
    public var rooms: [RoomInfo]

    public init(rooms: [RoomInfo]) { self.rooms = rooms }
}

/// Creates a room with this node as its owner and invites the given peers.
public struct RoomsCreateParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsCreate
    public static let fieldNames = ["name", "members", "onlyAdminsAdd", "sharedHistory"]

    /// 1...64 bytes of UTF-8, no control or bidirectional formatting characters.
    public var name: String
    /// PEER selectors (display name or fingerprint prefix) to invite; may be empty.
    public var members: [String]
    /// Only admins and owners may add members (default false: any joined member may).
    public var onlyAdminsAdd: Bool?
    /// Share the room's history with members who join later (default false).
    public var sharedHistory: Bool?

    public init(name: String, members: [String], onlyAdminsAdd: Bool? = nil, sharedHistory: Bool? = nil) {
        self.name = name
        self.members = members
        self.onlyAdminsAdd = onlyAdminsAdd
        self.sharedHistory = sharedHistory
    }

    public func validate() throws(JSONRPCError) {
        guard !name.isEmpty else { throw .invalidParams("\"name\" must not be empty") }
        guard name.utf8.count <= ControlLimits.maxRoomNameBytes else {
            throw .invalidParams("\"name\" is longer than \(ControlLimits.maxRoomNameBytes) bytes")
        }
        guard !name.hasPrefix("#") else { throw .invalidParams("\"name\" must not start with '#'") }
        guard members.count < ControlLimits.maxCreateMembers else {
            throw .invalidParams(
                "\"members\" has more than \(ControlLimits.maxCreateMembers - 1) peers; add the others with rooms.add")
        }
        for m in members { try ParamCheck.peerSelector(m, field: "members") }
    }
}

/// The room after a change.
public struct RoomResult: Codable, Sendable, Hashable {
    public var room: RoomInfo

    public init(room: RoomInfo) { self.room = room }
}

/// Invites a peer to a room (any joined member, or only admins if the room says so).
public struct RoomsAddParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsAdd
    public static let fieldNames = ["room", "peer"]

    public var room: String
    public var peer: String

    public init(room: String, peer: String) {
        self.room = room
        self.peer = peer
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(room, field: "room")
        try ParamCheck.peerSelector(peer, field: "peer")
    }
}

/// Removes a member from a room (an admin or owner, of a member ranked below it).
public struct RoomsRemoveParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsRemove
    public static let fieldNames = ["room", "peer"]

    public var room: String
    public var peer: String

    public init(room: String, peer: String) {
        self.room = room
        self.peer = peer
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(room, field: "room")
        try ParamCheck.peerSelector(peer, field: "peer")
    }
}

/// This node leaves a room (it removes itself).
public struct RoomsLeaveParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsLeave
    public static let fieldNames = ["room"]

    public var room: String

    public init(room: String) { self.room = room }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(room, field: "room")
    }
}

/// One room selector: `rooms.accept`, `rooms.decline`.
public protocol RoomSelectorParams: ControlCallParams where ResultType == RoomResult {
    var room: String { get }
    init(room: String)
}

extension RoomSelectorParams {
    public static var fieldNames: [String] { ["room"] }
    public func validate() throws(JSONRPCError) { try ParamCheck.peerSelector(room, field: "room") }
}

/// Accepts this node's invitation to a room (it joins: messages start to flow).
public struct RoomsAcceptParams: RoomSelectorParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsAccept
    public var room: String
    public init(room: String) { self.room = room }
}

/// Declines this node's invitation to a room (it leaves; the inviter sees it).
public struct RoomsDeclineParams: RoomSelectorParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsDecline
    public var room: String
    public init(room: String) { self.room = room }
}

/// Gives a member a role: `member`, `admin` or `owner` (promote or demote).
public struct RoomsSetRoleParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsSetRole
    public static let fieldNames = ["room", "peer", "role"]

    public var room: String
    public var peer: String
    public var role: String

    public init(room: String, peer: String, role: String) {
        self.room = room
        self.peer = peer
        self.role = role
    }

    public static let roles = ["member", "admin", "owner"]

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(room, field: "room")
        try ParamCheck.peerSelector(peer, field: "peer")
        guard Self.roles.contains(role) else { throw .invalidParams("\"role\" must be one of member, admin, owner") }
    }
}

/// Renames a room (admins and owners).
public struct RoomsRenameParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsRename
    public static let fieldNames = ["room", "name"]

    public var room: String
    public var name: String

    public init(room: String, name: String) {
        self.room = room
        self.name = name
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(room, field: "room")
        guard !name.isEmpty, name.utf8.count <= ControlLimits.maxRoomNameBytes, !name.hasPrefix("#") else {
            throw .invalidParams("\"name\" must be 1-\(ControlLimits.maxRoomNameBytes) bytes, not starting with '#'")
        }
    }
}

/// Sets the room's policy (admins and owners).
public struct RoomsSetPolicyParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsSetPolicy
    public static let fieldNames = ["room", "onlyAdminsAdd", "sharedHistory"]

    public var room: String
    /// Absent: unchanged. At least one of the two settings must be given.
    public var onlyAdminsAdd: Bool?
    /// History shared with new members; absent: unchanged.
    public var sharedHistory: Bool?

    public init(room: String, onlyAdminsAdd: Bool? = nil, sharedHistory: Bool? = nil) {
        self.room = room
        self.onlyAdminsAdd = onlyAdminsAdd
        self.sharedHistory = sharedHistory
    }

    public func validate() throws(JSONRPCError) {
        try ParamCheck.peerSelector(room, field: "room")
        guard onlyAdminsAdd != nil || sharedHistory != nil else {
            throw .invalidParams("give \"onlyAdminsAdd\" or \"sharedHistory\" (or both)")
        }
    }
}

/// A room's name, members or version changed, or this node learned of a room.
public struct RoomUpdatedEvent: ControlEventParams {
    public static let method = ControlEvent.roomUpdated
    public var room: RoomInfo

    public init(room: RoomInfo) { self.room = room }
}
