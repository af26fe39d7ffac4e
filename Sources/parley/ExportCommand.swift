import ArgumentParser
import Foundation
import ParleyControlProtocol

/// `parley export [PEER] --format json|text`: the whole history, paged through
/// `messages.list`, written to stdout as it arrives (memory stays bounded).
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract:
            "Write the message history (one conversation or #room, or all) to stdout as JSON lines or a transcript.",
        discussion: """
            --format json writes one object per message and line, oldest first, with the keys documented \
            in docs/CONTROL.md ("parley export"). --format text writes a readable transcript. Exporting \
            does not mark anything read. Messages the store cannot read (damaged) are left out and named \
            on stderr, and the exit status is then 1: the export is not a complete copy.
            """)

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case json, text
    }

    @OptionGroup var options: ConnectionOptions

    @Argument(
        help: "Only the conversation with this peer (display name or fingerprint prefix), or #ROOM.",
        completion: PeerCompletion.peersAndRooms)
    var peer: String?

    @Option(name: .long, help: "json (one object per line) or text (a transcript). Default: text, or json with --json.")
    var format: Format?

    func validate() throws { try validateForCommandLine(MessagesListParams(peer: peer)) }

    func run() throws {
        let format = self.format ?? (options.json ? .json : .text)
        var unreadable: [Int] = []
        try Session.run(options, peer: peer) { client in
            if format == .text {
                let me = try client.call(NodeWhoamiParams())
                let now = TranscriptFormat.timestamp(Int(Date().timeIntervalSince1970 * 1000))
                TranscriptFormat.header(me: me.name, peer: peer, exportedAt: now).forEach(Console.out)
            }
            var after = 0
            while true {
                let page = try client.call(
                    MessagesListParams(peer: peer, after: after, limit: ControlLimits.maxListLimit))
                unreadable += page.unreadable
                for m in page.messages {
                    switch format {
                    case .json: Console.json(ExportedMessage(m))
                    case .text: TranscriptFormat.lines(m, time: { TranscriptFormat.timestamp($0) }).forEach(Console.out)
                    }
                }
                guard let next = page.nextCursor, !page.messages.isEmpty || !page.unreadable.isEmpty else { break }
                after = next
            }
        }
        // Not a complete copy: a script that exports before deleting must not go on.
        guard unreadable.isEmpty else {
            Console.err(UnreadableMessages.notice(unreadable, what: "this export"))
            throw ExitCode(CLIExitCode.daemonError)
        }
    }
}
