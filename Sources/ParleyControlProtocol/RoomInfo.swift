/// One member of a room as the daemon shows it.
public struct RoomMemberInfo: Codable, Sendable, Hashable {
    /// Display name (this node's own name for itself).
    public var name: String
    public var fingerprint: String
    /// True for this node itself.
    public var you: Bool
    /// `member`, `admin` or `owner`.
    public var role: String
    /// False while the member has not accepted its invitation ("invited").
    public var joined: Bool
    /// Whether a person verified this member's key (compared fingerprints or the safety
    /// number). False for a name the member gave itself, by a handshake or by the card the
    /// room's operations carry (room cards); absent for this node itself.
    public var verified: Bool?

    public init(
        name: String, fingerprint: String, you: Bool, role: String = "member", joined: Bool = true,
        verified: Bool? = nil
    ) {
        self.name = name
        self.fingerprint = fingerprint
        self.you = you
        self.role = role
        self.joined = joined
        self.verified = verified
    }
}

/// A room as this node resolved it from the room's signed operations.
public struct RoomInfo: Codable, Sendable, Hashable {
    /// 32 hex digits; a prefix of 4 or more selects the room.
    public var id: String
    public var name: String
    /// Current members (joined and invited), by fingerprint.
    public var members: [RoomMemberInfo]
    /// Whether this node is a joined member (false while invited, after leaving or being removed).
    public var member: Bool
    /// `joined`, `invited` (answer with `rooms.accept` / `rooms.decline`), `left`, or
    /// `retired` (a room of the first protocol version, kept as history).
    public var status: String
    /// This node's role while it is a member (joined or invited); nil otherwise.
    public var role: String?
    /// Fingerprint of the peer that delivered the invitation (status `invited`).
    public var invitedBy: String?
    /// That peer's display name (your nickname for it, else the name it chose), for showing
    /// beside `invitedBy`: a name alone proves nothing.
    public var invitedByName: String?
    /// Only admins and owners may add members.
    public var onlyAdminsAdd: Bool
    /// History is shared with new members: what is written while this is on goes to
    /// members who join later too (docs/PROTOCOL.md "Who gets which message"). Read as
    /// false from a daemon older than it.
    public var sharedHistory: Bool
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

    public init(
        id: String, name: String, members: [RoomMemberInfo], member: Bool, creator: String,
        creatorName: String, createdAt: Int, version: Int, queued: Int, unread: Int = 0,
        status: String? = nil, role: String? = nil, invitedBy: String? = nil, onlyAdminsAdd: Bool = false,
        invitedByName: String? = nil, sharedHistory: Bool = false
    ) {
        self.invitedByName = invitedByName
        self.sharedHistory = sharedHistory
        self.status = status ?? (member ? "joined" : "left")
        self.role = role
        self.invitedBy = invitedBy
        self.onlyAdminsAdd = onlyAdminsAdd
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

    enum CodingKeys: String, CodingKey {
        case id, name, members, member, status, role, invitedBy, invitedByName, onlyAdminsAdd, creator, creatorName
        case createdAt, version, queued, unread, sharedHistory
    }

    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        name = try c.decode(String.self, forKey: .name)
        members = try c.decode([RoomMemberInfo].self, forKey: .members)
        member = try c.decode(Bool.self, forKey: .member)
        status = try c.decode(String.self, forKey: .status)
        role = try c.decodeIfPresent(String.self, forKey: .role)
        invitedBy = try c.decodeIfPresent(String.self, forKey: .invitedBy)
        invitedByName = try c.decodeIfPresent(String.self, forKey: .invitedByName)
        onlyAdminsAdd = try c.decode(Bool.self, forKey: .onlyAdminsAdd)
        sharedHistory = try c.decodeIfPresent(Bool.self, forKey: .sharedHistory) ?? false
        creator = try c.decode(String.self, forKey: .creator)
        creatorName = try c.decode(String.self, forKey: .creatorName)
        createdAt = try c.decode(Int.self, forKey: .createdAt)
        version = try c.decode(Int.self, forKey: .version)
        queued = try c.decode(Int.self, forKey: .queued)
        unread = try c.decode(Int.self, forKey: .unread)
    }

    /// Every field always present: `role`, `invitedBy` and `invitedByName` are `null`, not absent, when nil
    /// (docs/CONTROL.md: "Optional fields of results are always present"; a removed
    /// member's room has no role).
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(name, forKey: .name)
        try c.encode(members, forKey: .members)
        try c.encode(member, forKey: .member)
        try c.encode(status, forKey: .status)
        try c.encode(role, forKey: .role)  // null, not absent, when nil
        try c.encode(invitedBy, forKey: .invitedBy)  // null, not absent, when nil
        try c.encode(invitedByName, forKey: .invitedByName)  // null, not absent, when nil
        try c.encode(onlyAdminsAdd, forKey: .onlyAdminsAdd)
        try c.encode(sharedHistory, forKey: .sharedHistory)
        try c.encode(creator, forKey: .creator)
        try c.encode(creatorName, forKey: .creatorName)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(version, forKey: .version)
        try c.encode(queued, forKey: .queued)
        try c.encode(unread, forKey: .unread)
    }
}

/// The room a message belongs to, in `MessageInfo.room`.
public struct MessageRoom: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    /// The message was written after its author's removal from the room (a removed member
    /// writing on, back-dated, taken before the removal reached this node): not part of the
    /// room's history, never unread. Derived from the room as resolved now, so it goes when
    /// the removal turns out void (docs/PROTOCOL.md "Removal caps").
    public var afterRemoval: Bool

    public init(id: String, name: String, afterRemoval: Bool = false) {
        self.id = id
        self.name = name
        self.afterRemoval = afterRemoval
    }

    enum CodingKeys: String, CodingKey { case id, name, afterRemoval }

    /// `afterRemoval` may be absent (a daemon older than it): read as false.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        name = try c.decode(String.self, forKey: .name)
        afterRemoval = try c.decodeIfPresent(Bool.self, forKey: .afterRemoval) ?? false
    }
}

extension MessageRoom: CanonicalJSONWritable, CanonicalJSONRawWritable {
    public func writeCanonicalJSON(into out: inout [UInt8]) {
        CanonicalRawWriter.append(self, to: &out)
    }

    /// Keys with their punctuation, the braces and `afterRemoval`'s value: 37 bytes,
    /// rounded up.
    var canonicalJSONMaxLength: Int {
        48 + CanonicalRawWriter.maxLength(id) + CanonicalRawWriter.maxLength(name)
    }

    func writeCanonicalJSON(to w: inout CanonicalRawWriter) {
        w.raw("{\"afterRemoval\":")
        w.bool(afterRemoval)
        w.raw(",\"id\":")
        w.string(id)
        w.raw(",\"name\":")
        w.string(name)
        w.raw("}")
    }
}
