/// One member of a room as the daemon shows it.
public struct RoomMemberInfo: Codable, Sendable, Hashable {
    /// Display name (this node's own name for itself).
    public var name: String
    public var fingerprint: String
    /// True for this node itself.
    public var you: Bool

    public init(name: String, fingerprint: String, you: Bool) {
        self.name = name
        self.fingerprint = fingerprint
        self.you = you
    }
}

/// A room as this node resolved it from the room's signed operations.
public struct RoomInfo: Codable, Sendable, Hashable {
    /// 32 hex digits; a prefix of 4 or more selects the room.
    public var id: String
    public var name: String
    /// Current members, by fingerprint.
    public var members: [RoomMemberInfo]
    /// Whether this node is a member (false after leaving or being removed).
    public var member: Bool
    public var creator: String
    public var creatorName: String
    /// Unix time in milliseconds on the creator's clock.
    public var createdAt: Int
    /// Grows with every membership change; equal versions and member lists mean two nodes agree.
    public var version: Int
    /// Outgoing messages to the room that some member has not acknowledged yet.
    public var queued: Int
    /// Incoming messages in the room not marked read (`messages.mark_read` with `#room`).
    public var unread: Int

    public init(id: String, name: String, members: [RoomMemberInfo], member: Bool, creator: String,
                creatorName: String, createdAt: Int, version: Int, queued: Int, unread: Int = 0) {
        self.id = id
        self.name = name
        self.members = members
        self.member = member
        self.creator = creator
        self.creatorName = creatorName
        self.createdAt = createdAt
        self.version = version
        self.queued = queued
        self.unread = unread
    }
}

/// The room a message belongs to, in `MessageInfo.room`.
public struct MessageRoom: Codable, Sendable, Hashable {
    public var id: String
    public var name: String

    public init(id: String, name: String) {
        self.id = id
        self.name = name
    }
}

extension MessageRoom: CanonicalJSONWritable {
    public func writeCanonicalJSON(into out: inout [UInt8]) {
        var o = CanonicalObjectWriter(into: &out)
        o.string("id", id, &out)
        o.string("name", name, &out)
        o.end(&out)
    }
}

