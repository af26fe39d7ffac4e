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
            match and its cursor; `parley read PEER --before CURSOR+1` shows the conversation up to it.
            """)

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "The words to find (quote several).")
    var text: String

    @Argument(help: "Only the conversation with this peer (display name or fingerprint prefix), or #ROOM.")
    var peer: String?

    @Option(name: .long, help: ArgumentHelp("How many hits, 1-200. Default 20.", valueName: "n"))
    var limit: Int?

    var params: MessagesSearchParams { MessagesSearchParams(query: text, peer: peer, limit: limit) }

    func validate() throws { try validateForCommandLine(params) }

    func run() throws {
        let params = self.params
        try Session.run(options, peer: peer) { client in
            let result = try client.call(params)
            if options.json { return Console.json(result) }
            if result.hits.isEmpty { Console.out("No messages match.") }
            for hit in result.hits {
                let m = hit.message
                let room = m.room.map { "#" + Terminal.line($0.name) + " " } ?? ""
                let who =
                    m.direction == .incoming
                    ? Terminal.line(m.fromName) : "you → " + Terminal.line(m.toName)
                Console.out(
                    "[\(HumanFormat.time(m.createdAt))] \(room)\(who): \(Terminal.line(hit.snippet))  (cursor \(m.cursor))"
                )
            }
        }
    }
}
