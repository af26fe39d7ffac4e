import ParleyControlProtocol
import ParleyCore
import ParleyStore

/// Rooms in the control protocol's wire types.
extension Node {
    func roomInfo(_ r: RoomRecord) -> RoomInfo {
        let joined = Set(r.joined)
        let members = r.members.map { m in
            RoomMemberInfo(
                name: displayName(of: m), fingerprint: Node.fingerprint(of: m), you: m == myIdentityKey,
                role: (r.roles[m] ?? .member).description, joined: joined.contains(m),
                verified: m == myIdentityKey ? nil : peerRecord(m)?.trust == .verified)
        }
        return RoomInfo(
            id: r.id.hex, name: r.name, members: members, member: r.isMember,
            creator: Node.fingerprint(of: r.creator), creatorName: displayName(of: r.creator),
            createdAt: Int(r.createdAt), version: Int(r.version),
            queued: (try? store.queuedRoomMessageCount(room: r.id)) ?? 0,
            unread: max(0, ((try? store.roomUnreadCount(room: r.id)) ?? 0) - afterRemovalMarks.unread(in: r.id)),
            status: r.status.rawValue, role: r.roles[myIdentityKey]?.description,
            invitedBy: r.inviter.map(Node.fingerprint(of:)), onlyAdminsAdd: r.onlyAdminsAdd,
            invitedByName: r.inviter.map { displayName(of: $0) }, sharedHistory: roomPolicy(r).sharedHistory)
    }

    /// The room's policy as this node resolves it now (the record caches only
    /// `onlyAdminsAdd`).
    func roomPolicy(_ r: RoomRecord) -> RoomOperation.Policy {
        let cached = RoomOperation.Policy(onlyAdminsAdd: r.onlyAdminsAdd)
        guard let state = try? roomEntry(r.id).state else { return cached }
        return state.policy
    }

    /// The other joined members of `room` (who a message to it goes to) and how many of
    /// them have a session up, for `messages.send`'s answer.
    func roomRecipientsOnline(_ room: RoomRecord) -> (all: Int, online: Int) {
        let others = room.joined.filter { $0 != myIdentityKey }
        return (others.count, others.filter(isOnline).count)
    }

    /// A room's name as this node resolved it (the id's first 8 digits if unknown).
    func roomDisplayName(of id: RoomID) -> String {
        (try? roomEntry(id).state?.name) ?? String(id.hex.prefix(8))
    }

    /// Adds the room to a message's view: `room` (with its mark when written after its
    /// author's removal, `AfterRemovalMarks`), and for outgoing room messages `to` =
    /// the room id and `toName` = `#name`.
    func withRoom(_ info: MessageInfo, _ m: StoredMessage) -> MessageInfo {
        guard let room = m.room else { return info }
        // One look at the room's entry for its name and the mark (every room message line).
        let entry = try? roomEntry(room)
        let name = entry?.state?.name ?? String(room.hex.prefix(8))
        let id = room.hex
        var out = info
        out.room = MessageRoom(id: id, name: name, afterRemoval: entry.map { afterRemovalMarks.isAfterRemoval(m, in: $0) } ?? false)
        if m.direction == .outgoing {
            out.to = id
            out.toName = "#" + name
        }
        return out
    }
}
