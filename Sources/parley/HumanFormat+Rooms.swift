import ParleyControlProtocol

extension HumanFormat {
    /// `alice (owner), bob (you, admin), carol (invited)`, names sanitised: a plain member
    /// that joined shows only its name.
    static func roomMembers(_ room: RoomInfo) -> String {
        room.members.map { m in
            var notes: [String] = []
            if m.you { notes.append("you") }
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
            let by = room.invitedBy.map { " by \($0.prefix(9))" } ?? ""
            return "invited\(by): `parley room accept #\(Terminal.line(room.name))` or decline"
        case "retired": return "(protocol-1 room, history only: create it again)"
        default: return "(you left or were removed)"
        }
    }

    /// The `parley follow` lines for a `room.updated` event.
    static func roomUpdated(_ room: RoomInfo, at time: String) -> [String] {
        let name = "#" + Terminal.line(room.name)
        switch room.status {
        case "invited":
            return ["[\(time)] \(name): you are invited (\(roomMembers(room))); `parley room accept \(name)` to join"]
        case "joined":
            return ["[\(time)] \(name) members: \(roomMembers(room)) (version \(room.version))"]
        default:
            return ["[\(time)] \(name): you are no longer a member"]
        }
    }
}
