import ArgumentParser
import ParleyControlProtocol

/// `parley search TEXT [PEER|#ROOM]`: full-text search over the history.
struct SearchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "search",
        abstract: "Search the whole history for messages containing every word of TEXT, best match first.",
        discussion: """
            Case and accents are ignored (cafe finds Café); each word also matches as a prefix (meet finds \
            meeting); Chinese, Japanese and Korean match by characters. Each hit shows the text around the \
            match and the exact `parley read` command that shows it in its conversation (the hit last).
            """)

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The words to find (quote several).")
    var text: String

    @Argument(
        help: "Only the conversation with this peer (display name or fingerprint prefix), or #ROOM.",
        completion: PeerCompletion.peersAndRooms)
    var peer: String?

    @Option(name: .long, help: ArgumentHelp("How many hits, 1-200. Default 20.", valueName: "n"))
    var limit: Int?

    /// Messages shown up to a hit by the suggested `parley read`.
    static let contextMessages = 10

    /// The exact command that shows a hit in its conversation, the hit last:
    /// `parley read '#lab' --before 15 --limit 10 --keep-unread`. The peer is named by
    /// fingerprint prefix (a name may be shared), the room by name, shell-quoted.
    static func contextCommand(_ m: MessageInfo) -> String {
        let selector =
            m.room.map { ShellQuoting.room(Terminal.line($0.name)) }
            ?? ShellQuoting.word(Terminal.line(String((m.direction == .incoming ? m.from : m.to).prefix(9))))
        return "parley read \(selector) --before \(m.cursor + 1) --limit \(contextMessages) --keep-unread"
    }

    var params: MessagesSearchParams { MessagesSearchParams(query: text, peer: peer, limit: limit) }

    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        let params = self.params
        try Session.run(options, peer: peer) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            if !result.unreadable.isEmpty {
                Console.err(UnreadableMessages.notice(result.unreadable, what: "these results"))
            }
            if result.hits.isEmpty { Console.out("No messages match.") }
            for hit in result.hits {
                let m = hit.message
                let room = m.room.map { "#" + Terminal.line($0.name) + " " } ?? ""
                let who =
                    m.direction == .incoming
                    ? Terminal.line(m.fromName) : "you → " + Terminal.line(m.toName)
                Console.out("[\(HumanFormat.time(m.createdAt))] \(room)\(who): \(Terminal.line(hit.snippet))")
                Console.out("    in context: " + Self.contextCommand(m))
            }
        }
    }
}
