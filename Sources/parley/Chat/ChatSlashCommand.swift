/// A line typed in the chat view that starts with "/": a conversation action instead of a
/// message. Pure parsing; `ChatCommand` performs it. "//text" sends "/text" as a message.
///
/// Actions on a message take the number shown beside it (`[3]`) first: `/reply 3 text`,
/// `/react 3 👍`, `/edit 5 text`, `/delete 5`. Without a number they act on the newest
/// message that fits: the peer's newest for /reply and /react, your own for /edit and
/// /delete. A leading word of digits is always the number, so to reply "42 is right" to the
/// newest message, give its number too.
enum ChatSlashCommand: Equatable {
    /// Reply to a message.
    case reply(Int?, String)
    /// Replace the text of one of your messages.
    case edit(Int?, String)
    /// Delete one of your messages for everyone.
    case delete(Int?)
    /// React to a message.
    case react(Int?, String)
    /// Send a file (a path, relative to where `parley chat` runs) to the peer or room.
    case attach(String)
    /// `/help` (or `/?`): what the view understands.
    case help
    /// A line starting with "/" that is none of these: the view says what it knows.
    case unknown(String)

    static let helpText =
        "/reply [N] TEXT, /react [N] EMOJI, /edit [N] TEXT, /delete [N] (N: the number beside a message; "
        + "without it the newest), /attach PATH sends a file, //text sends /text, /help"

    /// Nil for an ordinary message (including "//…", returned with one "/" removed by `messageText`).
    static func parse(_ line: String) -> ChatSlashCommand? {
        guard line.hasPrefix("/"), !line.hasPrefix("//") else { return nil }
        let parts = line.dropFirst().split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        let name = parts.first.map(String.init) ?? ""
        let rest = parts.count > 1 ? String(parts[1]).trimmingSpaces : ""
        let (number, text) = numbered(rest)
        switch (name, text.isEmpty) {
        case ("reply", false), ("r", false): return .reply(number, text)
        case ("edit", false), ("e", false): return .edit(number, text)
        case ("delete", true), ("del", true): return .delete(number)
        case ("react", false): return .react(number, text)
        case ("attach", false), ("a", false): return .attach(rest)
        case ("help", true), ("?", true), ("h", true): return .help
        default: return .unknown(name)
        }
    }

    /// `3 text` → (3, "text"); `text` → (nil, "text"). At most 9 digits: a number, not a text.
    static func numbered(_ rest: String) -> (Int?, String) {
        let parts = rest.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard let first = parts.first, first.count <= 9, first.allSatisfy({ $0.isASCII && $0.isNumber }),
            let number = Int(first)
        else { return (nil, rest) }
        return (number, parts.count > 1 ? String(parts[1]).trimmingSpaces : "")
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
