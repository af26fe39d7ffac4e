/// `rooms.list`, `rooms.create`, `rooms.add`, `rooms.remove`, `rooms.leave`.
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

/// Creates a room with this node and the given peers as members.
public struct RoomsCreateParams: ControlCallParams {
    public typealias ResultType = RoomResult
    public static let method = ControlMethod.roomsCreate
    public static let fieldNames = ["name", "members"]

    /// 1...64 bytes of UTF-8, no control or bidirectional formatting characters.
    public var name: String
    /// PEER selectors (display name or fingerprint prefix); may be empty.
    public var members: [String]

    public init(name: String, members: [String]) {
        self.name = name
        self.members = members
    }

    public func validate() throws(JSONRPCError) {
        guard !name.isEmpty else { throw .invalidParams("\"name\" must not be empty") }
        guard name.utf8.count <= ControlLimits.maxRoomNameBytes else {
            throw .invalidParams("\"name\" is longer than \(ControlLimits.maxRoomNameBytes) bytes")
        }
        guard !name.hasPrefix("#") else { throw .invalidParams("\"name\" must not start with '#'") }
        guard members.count < ControlLimits.maxRoomMembers else {
            throw .invalidParams("\"members\" has more than \(ControlLimits.maxRoomMembers - 1) peers")
        }
        for m in members { try ParamCheck.peerSelector(m, field: "members") }
    }
}

/// The room after a change.
public struct RoomResult: Codable, Sendable, Hashable {
    public var room: RoomInfo

    public init(room: RoomInfo) { self.room = room }
}

/// Adds a peer to a room (any member may).
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

/// Removes a member from a room (any member may).
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

/// A room's name, members or version changed, or this node learned of a room.
public struct RoomUpdatedEvent: ControlEventParams {
    public static let method = ControlEvent.roomUpdated
    public var room: RoomInfo

    public init(room: RoomInfo) { self.room = room }
}
