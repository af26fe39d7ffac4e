#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import ParleyControlProtocol

/// `parley chat PEER`: a full-screen conversation in the terminal. History, then live
/// messages; a prompt at the bottom; Enter sends; Ctrl-C (or Ctrl-D on an empty line) quits.
struct ChatCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract: "Chat with a peer in the terminal: history, live messages, a prompt (Enter sends, Ctrl-C quits).",
        discussion: """
            Outgoing messages show … while queued, ✓ once delivered and ✓✓ once read. Messages shown are \
            marked read. Page Up / Page Down scroll; Ctrl-U erases the line, Ctrl-W a word, Ctrl-L redraws.
            """)

    /// Longest wait in poll(2): the clock in the status line and a missed SIGWINCH are
    /// caught up within a second.
    static let pollTimeoutMilliseconds: Int32 = 1_000
    /// Bytes read from the terminal at a time (a paste arrives in a few reads).
    static let readChunkBytes = 4_096

    @OptionGroup var options: ConnectionOptions

    @Argument(help: "Who to chat with: display name or fingerprint prefix.")
    var peer: String

    @Option(name: .long, help: ArgumentHelp("Messages of history shown at the start, 1-1000. Default 50.", valueName: "n"))
    var history: Int = ControlLimits.defaultListLimit

    func validate() throws {
        guard (1...ControlLimits.maxListLimit).contains(history) else {
            throw ValidationError("--history must be between 1 and \(ControlLimits.maxListLimit)")
        }
        try validateForCommandLine(MessagesSubscribeParams(peer: peer))
        if options.json { throw ValidationError("parley chat is interactive; --json does not apply") }
    }

    func run() throws {
        // Checked before connecting: history shown nowhere must not be marked read.
        guard isatty(0) == 1, isatty(1) == 1 else {
            Console.err("parley: \(RawTerminal.Failure.notATerminal)")
            throw ExitCode(CLIExitCode.usage)
        }
        try Session.run(options, peer: peer) { client in
            var view = try ChatView(client: client, peer: peer, history: history)
            do {
                try view.run()
            } catch let error as RawTerminal.Failure {
                Console.err("parley: \(error)")
                throw ExitCode(CLIExitCode.usage)
            }
        }
    }
}

/// The running chat: the daemon connection, the terminal and the model.
private struct ChatView {
    let client: ControlClient
    let peer: String
    var model = ChatModel()
    var editor = LineEditor()
    var decoder = TerminalKeyDecoder()
    var peerName: String
    var online = false
    var scroll = 0
    var size = RawTerminal.size()

    init(client: ControlClient, peer: String, history: Int) throws(ControlClientError) {
        self.client = client
        self.peer = peer
        peerName = peer
        if let info = Self.find(peer, in: try client.call(PeersListParams()).peers) {
            peerName = info.name
            online = info.online
        }
        // Subscribe first, then read history: a message arriving in between is in both,
        // and the model shows it once.
        _ = try client.call(MessagesSubscribeParams(peer: peer))
        for m in try client.call(MessagesListParams(peer: peer, limit: history)).messages { model.add(m) }
        try markRead()
    }

    /// The peer the selector names, as the daemon would resolve it (for the title only:
    /// the daemon resolves the selector itself for every call).
    static func find(_ selector: String, in peers: [PeerInfo]) -> PeerInfo? {
        if let byName = peers.first(where: { $0.name == selector }) { return byName }
        let wanted = selector.lowercased().filter { $0 != "-" && $0 != " " && $0 != ":" }
        guard wanted.count >= 4 else { return nil }
        let matches = peers.filter { $0.fingerprint.replacingOccurrences(of: "-", with: "").hasPrefix(wanted) }
        return matches.count == 1 ? matches[0] : nil
    }

    mutating func run() throws {
        let terminal = try RawTerminal()
        defer { terminal.restore() }
        redraw(terminal)
        while true {
            var dirty = false
            if client.hasBufferedNotifications {
                dirty = try drainNotifications() || dirty
            } else {
                var fds = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: client.fileDescriptor, events: Int16(POLLIN), revents: 0)]
                let ready = poll(&fds, 2, ChatCommand.pollTimeoutMilliseconds)
                if ready < 0 && errno != EINTR { throw ControlClientError.io(operation: "poll", reason: String(cString: strerror(errno))) }
                if ready > 0 && fds[0].revents != 0 {
                    var buffer = [UInt8](repeating: 0, count: ChatCommand.readChunkBytes)
                    let n = read(0, &buffer, buffer.count)
                    if n == 0 { return }  // the terminal went away
                    if n > 0 {
                        for key in decoder.feed(Array(buffer[0..<n])) {
                            switch try handle(key) {
                            case .quit: return
                            case .redraw: dirty = true
                            case .none: break
                            }
                        }
                    }
                }
                if ready > 0 && fds[1].revents != 0 { dirty = try drainNotifications() || dirty }
            }
            let now = RawTerminal.size()
            if now != size { size = now; dirty = true }
            if dirty { redraw(terminal) }
        }
    }

    enum Action { case quit, redraw, none }

    mutating func handle(_ key: TerminalKey) throws -> Action {
        switch key {
        case .interrupt: return .quit
        case .endOfInput where editor.isEmpty: return .quit
        case .endOfInput: _ = editor.apply(.delete); return .redraw
        case .redraw: return .redraw
        case .pageUp: scroll += max(1, size.height - 3); return .redraw
        case .pageDown: scroll = max(0, scroll - max(1, size.height - 3)); return .redraw
        default: break
        }
        switch editor.apply(key) {
        case .ignored: return .none
        case .edited: return .redraw
        case .submit(let text):
            do {
                if let command = ChatSlashCommand.parse(text) {
                    try perform(command)
                } else {
                    let sent = try client.call(MessagesSendParams(to: peer, body: ChatSlashCommand.messageText(text)))
                    model.add(sent.message)
                }
                editor.clear()
                scroll = 0
            } catch .remote(let error) {
                // The text stays in the prompt: fix the problem and press Enter again.
                model.notice("not sent: \(error.message)", at: Self.nowMs())
            }
            _ = try drainNotifications()
            return .redraw
        }
    }

    /// Performs a /command on the newest message (its answer updates the view at once).
    mutating func perform(_ command: ChatSlashCommand) throws(ControlClientError) {
        let now = Self.nowMs()
        switch command {
        case .reply(let text):
            guard let id = model.newestIncomingID else { return model.notice("nothing to reply to yet", at: now) }
            model.add(try client.call(MessagesReplyParams(message: id, body: text)).message)
        case .edit(let text):
            guard let id = model.newestOwnID else { return model.notice("you have no message here to edit", at: now) }
            model.update(try client.call(MessagesEditParams(message: id, body: text)).message)
        case .delete:
            guard let id = model.newestOwnID else { return model.notice("you have no message here to delete", at: now) }
            model.update(try client.call(MessagesDeleteParams(message: id)).message)
        case .react(let reaction):
            guard let id = model.newestIncomingID else { return model.notice("nothing to react to yet", at: now) }
            model.update(try client.call(MessagesReactParams(message: id, reaction: reaction)).message)
        case .unknown(let name):
            model.notice("unknown command /\(name): \(ChatSlashCommand.help)", at: now)
        }
    }

    /// Applies every notification that has arrived; true if anything changed on screen.
    mutating func drainNotifications() throws -> Bool {
        var changed = false
        var newIncoming = false
        while let n = try client.pollNotification() {
            changed = true
            guard let event = try? ControlEventPayload(n) else { continue }
            switch event {
            case .messageReceived(let e):
                if model.add(e.message), e.message.direction == .incoming { newIncoming = true }
            case .messageDelivered(let e): model.mark(e.id, .delivered)
            case .messageRead(let e): model.mark(e.id, .read)
            case .peerOnline(let e):
                online = true
                peerName = e.peer.name
                model.notice("\(e.peer.name) is online", at: Self.nowMs())
            case .peerOffline(let e):
                online = false
                model.notice("\(e.peer.name) is offline", at: Self.nowMs())
            case .peerNew(let e):
                model.notice(HumanFormat.newPeerNotice(e).joined(separator: " "), at: Self.nowMs())
            case .messageUpdated(let e): model.update(e.message)
            case .peerStatus(let e):
                model.notice(e.status.isEmpty ? "\(e.name) cleared their status" : "\(e.name) is \"\(e.status)\"",
                             at: Self.nowMs())
            case .roomUpdated(let e):
                model.notice(e.room.member ? "#\(e.room.name) members: \(HumanFormat.roomMembers(e.room))"
                                           : "you are no longer a member of #\(e.room.name)", at: Self.nowMs())
            case .subscriptionClosed(let e):
                throw ControlClientError.remote(JSONRPCError(code: e.code, message: e.message))
            case .unknown:
                changed = false
            }
        }
        // On screen means read: the sender sees ✓✓ (unless read receipts are off).
        if newIncoming { try markRead() }
        return changed
    }

    func markRead() throws(ControlClientError) {
        guard let cursor = model.newestIncomingCursor else { return }
        _ = try client.call(MessagesMarkReadParams(peer: peer, upTo: cursor))
    }

    mutating func redraw(_ terminal: RawTerminal) {
        let width = size.width
        // Only the entries that can be on screen (or just above it, for Page Up) are laid out.
        var lines: [String] = []
        for entry in model.entries.reversed() {
            lines.insert(contentsOf: ChatLayout.lines(entry, width: width, time: Self.clock), at: 0)
            if lines.count >= size.height + scroll { break }
        }
        let status = "\(Terminal.line(peerName)) · \(online ? "online" : "offline") · Enter sends · Ctrl-C quits"
        let screen = ChatLayout.screen(lines: lines, status: status, editor: editor, width: width,
                                       height: size.height, scroll: &scroll)
        terminal.draw(screen, statusRow: screen.rows.count >= ChatLayout.minimumRows ? screen.rows.count - 2 : nil)
    }

    static func nowMs() -> Int { Int(Date().timeIntervalSince1970 * 1000) }

    /// `14:05` today, `03-01 14:05` on other days.
    static func clock(_ unixMilliseconds: Int) -> String {
        let date = Date(timeIntervalSince1970: Double(unixMilliseconds) / 1000)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = Calendar.current.isDateInToday(date) ? "HH:mm" : "MM-dd HH:mm"
        return formatter.string(from: date)
    }
}
