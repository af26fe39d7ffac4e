/// A line typed in the chat view that starts with "/": a conversation action on the newest
/// message instead of a message. Pure parsing; `ChatCommand` performs it. "//text" sends
/// "/text" as a message.
enum ChatSlashCommand: Equatable {
    /// Reply to the peer's newest message.
    case reply(String)
    /// Replace the text of your newest message.
    case edit(String)
    /// Delete your newest message for everyone.
    case delete
    /// React to the peer's newest message.
    case react(String)
    /// Send a file (a path, relative to where `parley chat` runs) to the peer or room.
    case attach(String)
    /// A line starting with "/" that is none of these: the view says what it knows.
    case unknown(String)

    static let help =
        "/reply TEXT, /edit TEXT, /delete, /react EMOJI (on the newest message); /attach PATH sends a file; //text sends /text"

    /// Nil for an ordinary message (including "//…", returned with one "/" removed by `messageText`).
    static func parse(_ line: String) -> ChatSlashCommand? {
        guard line.hasPrefix("/"), !line.hasPrefix("//") else { return nil }
        let parts = line.dropFirst().split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        let name = parts.first.map(String.init) ?? ""
        let rest = parts.count > 1 ? String(parts[1]).trimmingSpaces : ""
        switch (name, rest.isEmpty) {
        case ("reply", false), ("r", false): return .reply(rest)
        case ("edit", false), ("e", false): return .edit(rest)
        case ("delete", true), ("del", true): return .delete
        case ("react", false): return .react(rest)
        case ("attach", false), ("a", false): return .attach(rest)
        default: return .unknown(name)
        }
    }

    /// The message to send for an ordinary line ("//x" → "/x").
    static func messageText(_ line: String) -> String {
        line.hasPrefix("//") ? String(line.dropFirst()) : line
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var s = Substring(self)
        while s.first == " " { s = s.dropFirst() }
        while s.last == " " { s = s.dropLast() }
        return String(s)
    }
}
