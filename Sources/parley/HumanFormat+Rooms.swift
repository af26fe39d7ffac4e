import ParleyControlProtocol

extension HumanFormat {
    /// `#name: alice, bob (you), carol`, names sanitised.
    static func roomMembers(_ room: RoomInfo) -> String {
        room.members.map { Terminal.line($0.name) + ($0.you ? " (you)" : "") }.joined(separator: ", ")
    }

    /// The `parley follow` lines for a `room.updated` event.
    static func roomUpdated(_ room: RoomInfo, at time: String) -> [String] {
        let name = "#" + Terminal.line(room.name)
        guard room.member else { return ["[\(time)] \(name): you are no longer a member"] }
        return ["[\(time)] \(name) members: \(roomMembers(room)) (version \(room.version))"]
    }
}
