import ParleyControlProtocol

extension HumanFormat {
    /// `alice (owner), bob (you, admin), carol (invited)`, names sanitised: a plain member
    /// that joined shows only its name.
    /// A member nobody verified shows its fingerprint prefix beside its name: the name is a
    /// label it chose (by a handshake, or by its card passed on by the room), so two members
    /// called "alice", or a look-alike of a contact's name, are told apart by who they are.
    static func roomMembers(_ room: RoomInfo) -> String {
        room.members.map { m in
            var notes: [String] = []
            if m.you { notes.append("you") }
            if m.verified == false { notes.append(Terminal.line(String(m.fingerprint.prefix(9)))) }
            if m.role != "member" { notes.append(m.role) }
            if !m.joined { notes.append("invited") }
            return Terminal.line(m.name) + (notes.isEmpty ? "" : " (" + notes.joined(separator: ", ") + ")")
        }.joined(separator: ", ")
    }

    /// The STATUS column of `parley rooms`.
    static func roomStatus(_ room: RoomInfo) -> String {
        switch room.status {
        case "joined": return room.role ?? "member"
        case "invited": return "invited"
        case "retired": return "retired"
        default: return "left"
        }
    }

    /// The MEMBERS column: who is in, or what this node can do about the room.
    static func roomMembersColumn(_ room: RoomInfo) -> String {
        switch room.status {
        case "joined": return roomMembers(room)
        case "invited":
            return
                "invited\(invitedBy(room)): `parley room accept \(ShellQuoting.room(Terminal.line(room.name)))` or decline"
        case "retired": return "(protocol-1 room, history only: create it again)"
        default: return "(you left or were removed)"
        }
    }

    /// ` by alice (pkhh-45sk)`: who delivered the invitation, by name (a label the inviter
    /// chose or your nickname for it) and fingerprint prefix (who it really is); empty when
    /// unknown.
    static func invitedBy(_ room: RoomInfo) -> String {
        guard let fingerprint = room.invitedBy else { return "" }
        let short = Terminal.line(String(fingerprint.prefix(9)))
        guard let name = room.invitedByName, !name.isEmpty, name != String(fingerprint.prefix(9)) else {
            return " by \(short)"
        }
        if name.contains(String(fingerprint.prefix(9))) { return " by \(Terminal.line(name))" }
        return " by \(Terminal.line(name)) (\(short))"
    }

    /// The `parley follow` lines for a `room.updated` event.
    static func roomUpdated(_ room: RoomInfo, at time: String) -> [String] {
        let name = "#" + Terminal.line(room.name)
        switch room.status {
        case "invited":
            return [
                "[\(time)] \(name): you are invited\(invitedBy(room)) (\(roomMembers(room))); "
                    + "`parley room accept \(ShellQuoting.room(Terminal.line(room.name)))` to join"
            ]
        case "joined":
            return ["[\(time)] \(name) members: \(roomMembers(room)) (version \(room.version))"]
        default:
            return ["[\(time)] \(name): you are no longer a member"]
        }
    }
}
