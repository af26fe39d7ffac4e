import ArgumentParser
import ParleyControlProtocol

/// `parley read [PEER]`: a page of the message log.
struct ReadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "read",
        abstract: "Show the newest messages (oldest of them first), or a page before or after a cursor.",
        discussion: """
            Without --before/--after the page is the newest messages; the hint on stderr gives the command for \
            the page before it. Showing a conversation marks it read up to the newest message shown (and sends \
            read receipts) unless --keep-unread.
            """)

    @OptionGroup var options: ConnectionOptions

    @Argument(
        help: "Only messages with this peer (display name or fingerprint prefix), or in #ROOM.",
        completion: PeerCompletion.peersAndRooms)
    var peer: String?

    @Option(name: .long, help: ArgumentHelp("How many messages, 1-1000. Default 50.", valueName: "n"))
    var limit: Int?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Only messages after this cursor (from --json output or a previous hint).", valueName: "cursor"))
    var after: Int?

    @Option(name: .long, help: ArgumentHelp("Only messages before this cursor (page backwards).", valueName: "cursor"))
    var before: Int?

    @Flag(name: .customLong("keep-unread"), help: "Do not mark the messages shown as read (and send no read receipts).")
    var keepUnread = false

    @Flag(name: .long, help: "Show each message's id (its first 8 digits), for parley reply/edit/delete/react.")
    var ids = false

    /// Which transfers go with the page: the peer's or the room's, as the daemon resolves
    /// the selector (one extra call), or all without one.
    func scope(_ client: ControlClient) throws(ControlClientError) -> TranscriptAttachments.Scope {
        guard let peer else { return .everything }
        if peer.hasPrefix("#") {
            let rooms = try client.call(RoomsListParams()).rooms
            return ConversationLookup.findRoom(peer, in: rooms).map { .room(id: $0.id) } ?? .room(id: "")
        }
        do {
            return .peer(fingerprint: try client.call(TrustShowParams(peer: peer)).peer.fingerprint)
        } catch .remote(let e) where e.code == ControlErrorCode.peerNotFound.rawValue {
            // A replaced key (see `earlierKeys`): messages.list still reads its history by
            // its fingerprint, trust.show no longer lists it.
            return .peer(fingerprint: peer)
        }
    }

    var params: MessagesListParams { MessagesListParams(peer: peer, after: after, before: before, limit: limit) }

    func validate() throws { try validateForCommandLine(params) }

    /// At the start of a contact's history (no older page), the contact's replaced keys
    /// (a colleague who reinstalled): their history stays under the old key, which the page
    /// shows under a divider and `parley read OLD-FINGERPRINT` shows here.
    func earlierKeys(_ client: ControlClient, _ page: MessagesListResult) -> [PreviousKeyInfo] {
        guard let peer, !peer.hasPrefix("#"), page.olderCursor == nil, !params.pagesForward,
            let shown = try? client.call(TrustShowParams(peer: peer))
        else { return [] }
        return shown.previousKeys
    }

    func run() throws {
        let params = self.params
        try Session.run(options, peer: peer) { client in
            let page = try client.call(params)
            // Reading marks what was shown (and everything before it in that conversation)
            // read, for every conversation on the page.
            if !keepUnread {
                for mark in ReadMarks.marks(for: page.messages) {
                    do {
                        _ = try client.call(MessagesMarkReadParams(peer: mark.selector, upTo: mark.upTo))
                    } catch ControlClientError.remote(let e) where e.code == ControlErrorCode.peerNotFound.rawValue {
                        // A replaced key's history: the key is listed nowhere, nothing to mark.
                    }
                }
            }
            if options.json { return Console.json(page) }
            let listed = (try? client.call(FilesListParams(limit: TranscriptAttachments.transfersRead)).transfers) ?? []
            let lines = TranscriptAttachments.lines(
                page: page, transfers: Array(listed.reversed()), scope: try scope(client), showID: ids)
            if lines.isEmpty && page.unreadable.isEmpty { Console.out("No messages.") }
            lines.forEach(Console.out)
            if !page.unreadable.isEmpty { Console.err(UnreadableMessages.notice(page.unreadable, what: "this page")) }
            var command = "parley read"
            if let peer { command += " \(ShellQuoting.word(Terminal.line(peer)))" }
            if let limit { command += " --limit \(limit)" }
            if let older = page.olderCursor, !params.pagesForward {
                Console.err("More: \(command) --before \(older)")
            }
            for key in earlierKeys(client, page) {
                Console.err(
                    "Earlier, with \(Terminal.line(key.name))'s previous key (replaced): "
                        + "parley read \(key.fingerprint)")
            }
            if let newer = page.newerCursor {
                Console.err("\(params.pagesForward ? "More" : "Newer"): \(command) --after \(newer)")
            }
        }
    }
}
