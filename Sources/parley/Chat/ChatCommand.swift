import ArgumentParser
import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// `parley chat PEER`: a full-screen conversation in the terminal. History, then live
/// messages; a prompt at the bottom; Enter sends; Ctrl-C (or Ctrl-D on an empty line) quits.
struct ChatCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat",
        abstract:
            "Chat with a peer or in a #room in the terminal: history, live messages, a prompt (Enter sends, Ctrl-C quits).",
        discussion: """
            Opens on the newest messages; Page Up scrolls back and loads older history, Page Down returns. \
            Outgoing messages show … while queued, ✓ once delivered and ✓✓ once read. Messages shown are \
            marked read. Each message has a number ([3]): /reply 3 TEXT, /react 3 EMOJI, /edit 3 TEXT and \
            /delete 3 act on it (without a number: the newest); /attach PATH sends a file; /help lists them. \
            The status line counts unread messages in other conversations and new messages below while \
            scrolled up. Up / Down recall lines sent in this chat; Alt-b / Alt-f (or Ctrl-Left / Ctrl-Right) \
            move by words; Ctrl-U erases the line, Ctrl-W a word, Ctrl-L redraws. A paste that would make the \
            line longer than a message may be (64 KiB) is refused with a notice. If parleyd restarts, chat \
            reconnects by itself and keeps the line being typed. chat is interactive: there is no --json.
            """)

    /// Longest wait in poll(2): the clock in the status line and a missed SIGWINCH are
    /// caught up within a second.
    static let pollTimeoutMilliseconds: Int32 = 1_000
    /// Bytes read from the terminal at a time (a paste arrives in a few reads).
    static let readChunkBytes = 4_096
    /// Between attempts to reach a daemon that went away (a restart takes a second or two).
    static let reconnectIntervalMilliseconds = 500
    /// Between two looks at the other conversations' unread counts and who is online (two
    /// local calls): an urgent message elsewhere shows in the status line within this.
    static let overviewIntervalMilliseconds = 2_000
    /// Transfers read at the start to show the conversation's attachments among its history.
    static let historyTransfers = 200

    @Option(
        name: .long,
        help: ArgumentHelp(
            "Control socket of parleyd. Default: $PARLEY_SOCKET, else the user's parleyd, else the system service's "
                + "(/run/parley/control.sock).",
            valueName: "path"))
    var socket: String?

    /// Accepted only to be refused with a clear message (every other command takes it),
    /// and not shown in the help: chat has no machine-readable output.
    @Flag(name: .long, help: .hidden)
    var json = false

    @Argument(
        help: "Who to chat with: a display name, a fingerprint prefix, or #ROOM.",
        completion: PeerCompletion.peersAndRooms)
    var peer: String

    @Option(
        name: .long, help: ArgumentHelp("Messages of history shown at the start, 1-1000. Default 50.", valueName: "n"))
    var history: Int = ControlLimits.defaultListLimit

    func validate() throws {
        guard (1...ControlLimits.maxListLimit).contains(history) else {
            throw ValidationError("--history must be between 1 and \(ControlLimits.maxListLimit)")
        }
        try validateForCommandLine(MessagesSubscribeParams(peer: peer))
        if json { throw ValidationError("parley chat is interactive; --json does not apply (use parley read --json)") }
    }

    func run() throws {
        // Checked before connecting: history shown nowhere must not be marked read.
        guard isatty(0) == 1, isatty(1) == 1 else {
            Console.err("parley: \(RawTerminal.Failure.notATerminal)")
            throw ExitCode(CLIExitCode.usage)
        }
        let options = try ConnectionOptions.parse(socket.map { ["--socket", $0] } ?? [])
        try Session.run(options, peer: peer) { client in
            var view = try ChatView(client: client, path: options.socketPath(), peer: peer, history: history)
            do {
                try view.run()
                view.client?.close()
            } catch let error as RawTerminal.Failure {
                Console.err("parley: \(error)")
                throw ExitCode(CLIExitCode.usage)
            }
        }
    }
}

/// The running chat: the daemon connection, the terminal and the model.
private struct ChatView {
    /// nil while parleyd is away: the view keeps running and reconnects.
    var client: ControlClient?
    let path: String
    let peer: String
    let history: Int
    var model = ChatModel()
    var editor = LineEditor()
    var sentLines = InputHistory()
    var decoder = TerminalKeyDecoder()
    var peerName: String
    var online = false
    /// The peer's fingerprint, or the room's id and its other members' fingerprints: what
    /// the status line and the attachments of the history are about.
    var peerFingerprint: String?
    var room: RoomInfo?
    var onlineFingerprints: Set<String> = []
    var unreadElsewhere: [ChatStatusLine.Unread] = []
    var nextOverview = ContinuousClock.now
    /// Incoming messages that arrived while scrolled up (shown in the status line).
    var newBelow = 0
    var scroll = 0
    var size = RawTerminal.size()
    /// Where older history starts (nil: nothing older, or not known yet).
    var olderCursor: Int?
    var nextReconnect = ContinuousClock.now

    init(client: ControlClient, path: String, peer: String, history: Int) throws(ControlClientError) {
        self.path = path
        self.peer = peer
        self.history = history
        peerName = peer
        try attach(client)
    }

    /// Subscribes on `client` and shows the newest history (again after a reconnect: the
    /// model shows each message once).
    mutating func attach(_ client: ControlClient) throws(ControlClientError) {
        try refreshOverview(client)
        let peers = try client.call(PeersListParams()).peers
        model.verifiedFingerprints = Set(peers.filter { $0.trust == .verified }.map(\.fingerprint))
        if let room {
            peerName = "#" + room.name
        } else if let info = Self.find(peer, in: peers) {
            peerName = HumanFormat.label(info)
            online = info.online
            peerFingerprint = info.fingerprint
        }
        // Subscribe first, then read history: a message arriving in between is in both,
        // and the model shows it once.
        _ = try client.call(MessagesSubscribeParams(peer: peer))
        let page = try client.call(MessagesListParams(peer: peer, limit: history))
        let firstTime = model.oldestCursor == nil
        if firstTime { olderCursor = page.olderCursor }
        for m in page.messages where model.contains(m.id) && m.direction == .outgoing {
            // Shown before a reconnect: its delivery or read may have happened meanwhile.
            model.update(m)
        }
        // The conversation's attachments go among the messages, at their time.
        let transfers = (try? client.call(FilesListParams(limit: ChatCommand.historyTransfers)).transfers) ?? []
        model.addHistory(
            page.messages, transfers: Array(transfers.filter(isInThisConversation).reversed()),
            complete: page.olderCursor == nil)
        self.client = client
        try markRead()
    }

    /// Whether a file transfer belongs to this chat: to or from the peer outside rooms, or
    /// in the room.
    func isInThisConversation(_ t: FileTransferInfo) -> Bool {
        if let room { return t.room == room.id }
        return t.room == nil && peerFingerprint != nil && t.peer == peerFingerprint
    }

    /// The other conversations' unread counts and who is online (for a room: how many
    /// members), from the daemon's lists.
    mutating func refreshOverview(_ client: ControlClient) throws(ControlClientError) {
        nextOverview = .now + .milliseconds(ChatCommand.overviewIntervalMilliseconds)
        let peers = try client.call(PeersListParams()).peers
        let rooms = try client.call(RoomsListParams()).rooms
        onlineFingerprints = Set(peers.filter(\.online).map(\.fingerprint))
        if peer.hasPrefix("#") { room = ConversationLookup.findRoom(peer, in: rooms) ?? room }
        if let room = room, let fresh = rooms.first(where: { $0.id == room.id }) { self.room = fresh }
        if room == nil, let info = Self.find(peer, in: peers) {
            online = info.online
            peerFingerprint = info.fingerprint
        }
        var unread: [ChatStatusLine.Unread] = []
        for p in peers where p.unread > 0 && p.fingerprint != peerFingerprint {
            unread.append(.init(name: Terminal.line(p.label), count: p.unread))
        }
        for r in rooms where r.unread > 0 && r.id != room?.id {
            unread.append(.init(name: "#" + Terminal.line(r.name), count: r.unread))
        }
        unreadElsewhere = unread
    }

    /// The room's other joined members and how many of them are online.
    var roomPresence: (members: Int, online: Int)? {
        guard let room else { return nil }
        let others = room.members.filter { $0.joined && !$0.you }
        return (others.count, others.filter { onlineFingerprints.contains($0.fingerprint) }.count)
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

    /// Whether `error` means the daemon went away (restart, stop): then the view waits and
    /// reconnects instead of exiting, and the line being typed is kept.
    static func isConnectionLost(_ error: ControlClientError) -> Bool {
        switch error {
        case .connectionClosed, .io, .timedOut, .cannotConnect: return true
        case .remote(let e): return e.knownCode == .subscriberTooSlow
        case .protocolViolation, .socketPathTooLong, .sharedSocketDirectory: return false
        }
    }

    mutating func lost(_ error: ControlClientError) {
        client?.close()
        client = nil
        online = false
        nextReconnect = .now + .milliseconds(ChatCommand.reconnectIntervalMilliseconds)
        model.notice("lost parleyd (\(error.description)); reconnecting…", at: Self.nowMs())
    }

    mutating func tryReconnect() -> Bool {
        guard client == nil, ContinuousClock.now >= nextReconnect else { return false }
        nextReconnect = .now + .milliseconds(ChatCommand.reconnectIntervalMilliseconds)
        do {
            try attach(try ControlClient.connect(path: path))
            model.notice("reconnected to parleyd", at: Self.nowMs())
            return true
        } catch {
            client = nil
            return false
        }
    }

    mutating func run() throws {
        let terminal = try RawTerminal()
        defer { terminal.restore() }
        redraw(terminal)
        while true {
            var dirty = false
            do {
                dirty = try step() || dirty
            } catch Stop.quit {
                return
            } catch let error as ControlClientError {
                guard Self.isConnectionLost(error) else { throw error }
                lost(error)
                dirty = true
            }
            if tryReconnect() { dirty = true }
            if let client, ContinuousClock.now >= nextOverview {
                let before = (unreadElsewhere, roomPresence?.online, online)
                do {
                    try refreshOverview(client)
                } catch {
                    if Self.isConnectionLost(error) { lost(error) }
                    dirty = true
                }
                if before != (unreadElsewhere, roomPresence?.online, online) { dirty = true }
            }
            if scroll == 0 && newBelow > 0 {
                newBelow = 0
                dirty = true
            }
            let now = RawTerminal.size()
            if now != size {
                size = now
                dirty = true
            }
            if dirty {
                try? loadOlderIfScrolledPastTop()
                redraw(terminal)
            }
        }
    }

    /// Thrown by `step` when the user quits.
    enum Stop: Error { case quit }

    /// One wait for the terminal or the daemon, and what came. True if the screen changed.
    /// Throws `Stop.quit`, or the `ControlClientError` that cut the daemon off.
    mutating func step() throws -> Bool {
        var dirty = false
        if let client, client.hasBufferedNotifications {
            return try drainNotifications()
        }
        do {
            var fds = [
                pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
                pollfd(fd: client?.fileDescriptor ?? -1, events: Int16(POLLIN), revents: 0)
            ]
            let timeout =
                client == nil ? Int32(ChatCommand.reconnectIntervalMilliseconds) : ChatCommand.pollTimeoutMilliseconds
            let ready = poll(&fds, 2, timeout)
            if ready < 0 && errno != EINTR {
                throw ControlClientError.io(operation: "poll", reason: String(cString: strerror(errno)))
            }
            if ready > 0 && fds[0].revents != 0 {
                var buffer = [UInt8](repeating: 0, count: ChatCommand.readChunkBytes)
                let n = read(0, &buffer, buffer.count)
                if n == 0 { throw Stop.quit }  // the terminal went away
                if n > 0 {
                    for key in decoder.feed(Array(buffer[0..<n])) {
                        switch try handle(key) {
                        case .quit: throw Stop.quit
                        case .redraw: dirty = true
                        case .none: break
                        }
                    }
                }
            }
            if ready > 0, client != nil, fds[1].revents != 0 { dirty = try drainNotifications() || dirty }
            return dirty
        }
    }

    enum Action { case quit, redraw, none }

    mutating func handle(_ key: TerminalKey) throws -> Action {
        switch key {
        case .interrupt: return .quit
        case .endOfInput where editor.isEmpty: return .quit
        case .endOfInput:
            _ = editor.apply(.delete)
            return .redraw
        case .redraw: return .redraw
        case .pageUp:
            scroll += max(1, size.height - 3)
            return .redraw
        case .pageDown:
            scroll = max(0, scroll - max(1, size.height - 3))
            if scroll == 0 { newBelow = 0 }
            return .redraw
        case .up:
            guard let line = sentLines.older(current: editor.text) else { return .none }
            editor.replace(with: line)
            return .redraw
        case .down:
            guard let line = sentLines.newer() else { return .none }
            editor.replace(with: line)
            return .redraw
        default: break
        }
        switch editor.apply(key) {
        case .ignored: return .none
        case .edited: return .redraw
        case .refused(let bytes):
            model.notice(
                "paste refused: it would make the message \(bytes) bytes; "
                    + "at most \(LineEditor.maxBytes) fit (send a long text with parley send PEER --file PATH)",
                at: Self.nowMs())
            scroll = 0
            return .redraw
        case .submit(let text):
            guard let client else {
                model.notice(
                    "not sent: parleyd is not connected yet; the line is kept, press Enter again once reconnected",
                    at: Self.nowMs())
                return .redraw
            }
            // A /command acts on the newest message; any other line is sent ("//x" sends "/x").
            let result: Result<Void, ControlClientError>
            do {
                if let command = ChatSlashCommand.parse(text) {
                    try perform(command, client: client)
                } else {
                    model.add(
                        try client.call(MessagesSendParams(to: peer, body: ChatSlashCommand.messageText(text))).message)
                }
                result = .success(())
            } catch {
                result = .failure(error)
            }
            switch result {
            case .success:
                sentLines.sent(text)
                editor.clear()
                scroll = 0
            case .failure(.remote(let error)) where !Self.isConnectionLost(.remote(error)):
                // The text stays in the prompt: fix the problem and press Enter again.
                model.notice("not sent: \(error.message)", at: Self.nowMs())
            case .failure(let error):
                throw error
            }
            _ = try drainNotifications()
            return .redraw
        }
    }

    /// Performs a /command on the message it names by number, else the newest that fits
    /// (its answer updates the view at once).
    mutating func perform(_ command: ChatSlashCommand, client: ControlClient) throws(ControlClientError) {
        let now = Self.nowMs()
        switch command {
        case .reply(let number, let text):
            switch model.target(number, own: false, verb: "reply to") {
            case .failure(let missing): model.notice(missing.notice, at: now)
            case .success(let id): model.add(try client.call(MessagesReplyParams(message: id, body: text)).message)
            }
        case .edit(let number, let text):
            switch model.target(number, own: true, verb: "edit") {
            case .failure(let missing): model.notice(missing.notice, at: now)
            case .success(let id): model.update(try client.call(MessagesEditParams(message: id, body: text)).message)
            }
        case .delete(let number):
            switch model.target(number, own: true, verb: "delete") {
            case .failure(let missing): model.notice(missing.notice, at: now)
            case .success(let id): model.update(try client.call(MessagesDeleteParams(message: id)).message)
            }
        case .react(let number, let reaction):
            switch model.target(number, own: false, verb: "react to") {
            case .failure(let missing): model.notice(missing.notice, at: now)
            case .success(let id):
                model.update(try client.call(MessagesReactParams(message: id, reaction: reaction)).message)
            }
        case .help:
            model.notice(ChatSlashCommand.helpText, at: now)
        case .attach(let path):
            let opened: OpenedFiles
            do { opened = try OpenedFiles.open([path]) } catch {
                return model.notice(error.description, at: now)
            }
            do {
                for t in try opened.send(client, to: peer).transfers {
                    model.transfer(t, at: now)
                }
            } catch .remote(let e) {
                model.notice("cannot attach \(path): \(e.message)", at: now)
            }
        case .unknown(let name):
            model.notice("unknown command /\(name): \(ChatSlashCommand.helpText)", at: now)
        }
    }

    /// Page Up past the oldest message loaded asks the daemon for the page before it.
    mutating func loadOlderIfScrolledPastTop() throws(ControlClientError) {
        guard scroll > 0, let client, let before = olderCursor else { return }
        guard layout().count < size.height - 2 + scroll else { return }
        let page = try client.call(MessagesListParams(peer: peer, before: before, limit: history))
        olderCursor = page.olderCursor
        model.prepend(page.messages)
    }

    /// Applies every notification that has arrived; true if anything changed on screen.
    mutating func drainNotifications() throws -> Bool {
        guard let client else { return false }
        var changed = false
        var newIncoming = false
        while let n = try client.pollNotification() {
            changed = true
            guard let event = try? ControlEventPayload(n) else { continue }
            switch event {
            case .messageReceived(let e):
                if model.add(e.message), e.message.direction == .incoming {
                    newIncoming = true
                    if scroll > 0 { newBelow += 1 }
                }
            case .messageDelivered(let e): model.mark(e.id, .delivered)
            case .messageRead(let e): model.mark(e.id, .read)
            case .messageRefused(let e):
                model.notice("not stored by the recipient: \(e.text); it stays queued", at: Self.nowMs())
            case .peerOnline(let e):
                onlineFingerprints.insert(e.peer.fingerprint)
                if room == nil {
                    online = true
                    peerName = HumanFormat.label(e.peer)
                }
                model.notice("\(e.peer.name) is online", at: Self.nowMs())
            case .peerOffline(let e):
                onlineFingerprints.remove(e.peer.fingerprint)
                if room == nil { online = false }
                model.notice("\(e.peer.name) is offline", at: Self.nowMs())
            case .peerNew(let e):
                model.notice(HumanFormat.newPeerNotice(e).joined(separator: " "), at: Self.nowMs())
            case .messageUpdated(let e): model.update(e.message)
            case .peerStatus(let e):
                model.notice(
                    e.status.isEmpty ? "\(e.name) cleared their status" : "\(e.name) is \"\(e.status)\"",
                    at: Self.nowMs())
            case .roomUpdated(let e):
                model.notice(
                    e.room.member
                        ? "#\(e.room.name) members: \(HumanFormat.roomMembers(e.room))"
                        : "you are no longer a member of #\(e.room.name)", at: Self.nowMs())
            case let .file(method, t):
                // The attachment line: name, size, state (progress only when it changes the state).
                if method == ControlEvent.fileProgress || !model.transfer(t, at: Self.nowMs()) { changed = false }
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
        guard let client, let cursor = model.newestIncomingCursor else { return }
        _ = try client.call(MessagesMarkReadParams(peer: peer, upTo: cursor))
    }

    /// The wrapped lines of the entries that can be on screen (or just above it, for Page Up).
    func layout() -> [String] {
        var lines: [String] = []
        for entry in model.entries.reversed() {
            lines.insert(contentsOf: ChatLayout.lines(entry, width: size.width, time: Self.clock, colour: true), at: 0)
            if lines.count >= size.height + scroll { break }
        }
        return lines
    }

    mutating func redraw(_ terminal: RawTerminal) {
        let width = size.width
        let lines = layout()
        let status = ChatStatusLine.text(
            title: Terminal.line(peerName), presence: ChatStatusLine.presence(online: online, room: roomPresence),
            connected: client != nil, unread: unreadElsewhere, newBelow: newBelow)
        let screen = ChatLayout.screen(
            lines: lines, status: status, editor: editor, width: width,
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
