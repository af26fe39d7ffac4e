/// The status line of `parley chat` (reverse video above the prompt). Pure.
///
/// `bob · online · carol 1 unread · Enter sends · /help · Ctrl-C quits`, and in a room
/// `#lab · 2 of 3 members online · …`: a room is never shown as a peer that is offline.
enum ChatStatusLine {
    /// Other conversations with unread messages, as the daemon counts them.
    struct Unread: Equatable {
        var name: String
        var count: Int
    }

    /// At most this many other conversations are named; the rest are summed.
    static let maxNamed = 3

    /// `online` / `offline` for a peer; for a room (`members` = other joined members)
    /// how many of them are online.
    static func presence(online: Bool, room: (members: Int, online: Int)?) -> String {
        guard let room else { return online ? "online" : "offline" }
        if room.members == 0 { return "no other member yet" }
        return room.online == room.members
            ? "all \(room.members) members online" : "\(room.online) of \(room.members) members online"
    }

    static func text(title: String, presence: String, connected: Bool, unread: [Unread], newBelow: Int) -> String {
        var parts = [title, connected ? presence : "parleyd away, reconnecting"]
        if newBelow > 0 { parts.append("↓ \(HumanFormat.count(newBelow, "new message")) below") }
        let waiting = unread.filter { $0.count > 0 }
        if !waiting.isEmpty {
            var named = waiting.prefix(maxNamed).map { "\($0.name) \($0.count)" }
            let rest = waiting.dropFirst(maxNamed).reduce(0) { $0 + $1.count }
            if rest > 0 { named.append("+\(rest)") }
            parts.append("unread: " + named.joined(separator: ", "))
        }
        parts += ["Enter sends", "/help", "Ctrl-C quits"]
        return parts.joined(separator: " · ")
    }
}
