import ParleyControlProtocol

/// What the chat view shows, built from history and events. Pure: messages and events go
/// in, entries come out, each message once, with its latest delivery mark.
struct ChatModel {
    /// Entries kept in memory: the view only ever shows the last screenfuls, and a chat
    /// left open for weeks must not grow without end.
    static let maxEntries = 5_000
    /// Marks remembered for messages not shown yet (a delivery event can overtake the
    /// answer to the send that created the message).
    static let maxEarlyMarks = 256

    private(set) var entries: [ChatEntry] = []
    private var early: [String: ChatEntry.Mark] = [:]
    /// Cursor of the newest incoming message shown: what `messages.mark_read` gets.
    private(set) var newestIncomingCursor: Int?

    /// Cursor of the oldest message shown: Page Up past it asks for the page before it.
    private(set) var oldestCursor: Int?
    /// The number the next message shown gets (`[3]`, for `/reply 3 …`).
    private(set) var nextNumber = 1
    /// File transfers shown, with the state last shown: each state change is one line, and
    /// the answer to /attach and the event that follows it are not shown twice.
    private var transferStates: [String: String] = [:]
    /// Transfers remembered for that (the oldest are forgotten first; a forgotten one at
    /// worst shows its state once more).
    static let maxTransfersRemembered = 1_024
    private var transferOrder: [String] = []

    /// Fingerprints of the keys the person verified: a room message's author is shown with
    /// a short fingerprint unless it is one of them (two members may show the same name).
    var verifiedFingerprints: Set<String> = []

    /// Adds a message unless it is already shown (history and live events overlap at
    /// the start). Returns whether it was new.
    @discardableResult
    mutating func add(_ m: MessageInfo) -> Bool {
        guard let entry = entry(for: m) else { return false }
        append(entry)
        return true
    }

    /// Older history (Page Up) goes above what is shown, in order; messages already shown
    /// are skipped. Returns how many were added. Older entries are what the bound on
    /// entries drops first, so a page that would not fit is cut at its old end.
    @discardableResult
    mutating func prepend(_ older: [MessageInfo]) -> Int {
        let fresh = older.compactMap { entry(for: $0) }
        let room = max(0, Self.maxEntries - entries.count)
        entries.insert(contentsOf: fresh.suffix(room), at: 0)
        return min(fresh.count, room)
    }

    /// The entry for a message not shown yet (nil if it is), updating the cursors.
    private mutating func entry(for m: MessageInfo) -> ChatEntry? {
        guard !entries.contains(where: { $0.id == m.id }) else { return nil }
        oldestCursor = min(oldestCursor ?? m.cursor, m.cursor)
        var entry: ChatEntry
        switch m.direction {
        case .incoming:
            entry = ChatEntry(
                id: m.id,
                kind: .incoming(
                    from: m.room == nil
                        ? m.fromName
                        : HumanFormat.label(
                            m.fromName, fingerprint: m.from, verified: verifiedFingerprints.contains(m.from))),
                time: m.createdAt, body: Self.text(of: m),
                mark: nil, deleted: m.deletedAt != nil, senderKey: m.from)
            newestIncomingCursor = max(newestIncomingCursor ?? m.cursor, m.cursor)
        case .outgoing:
            var mark = ChatEntry.Mark(m)
            if let e = early.removeValue(forKey: m.id) { mark = mark.advanced(to: e) }
            entry = ChatEntry(
                id: m.id, kind: .outgoing, time: m.createdAt, body: Self.text(of: m), mark: mark,
                holders: HumanFormat.holders(m), deleted: m.deletedAt != nil)
        }
        entry.number = nextNumber
        nextNumber += 1
        return entry
    }

    /// What the view shows for a message: the quote of a reply, "(edited)", the "(deleted)"
    /// placeholder, and the reactions on a line below.
    static func text(of m: MessageInfo) -> String {
        var text = HumanFormat.conversationBody(m)
        if !m.reactions.isEmpty {
            text += "\n" + m.reactions.map { "\($0.reaction) \($0.fromNames.count)" }.joined(separator: "  ")
        }
        return text
    }

    /// Whether message `id` is shown.
    func contains(_ id: String) -> Bool { entries.contains { $0.id == id } }

    /// A message changed (edited, deleted, reactions): its entry shows the new state.
    mutating func update(_ m: MessageInfo) {
        guard let i = entries.lastIndex(where: { $0.id == m.id }) else { return }
        entries[i].body = Self.text(of: m)
        entries[i].deleted = m.deletedAt != nil
        if m.direction == .outgoing {
            // A room message's holders grew (`message.updated`), or it was edited.
            entries[i].mark = (entries[i].mark ?? .queued).advanced(to: ChatEntry.Mark(m))
            entries[i].holders = HumanFormat.holders(m)
        }
    }

    /// The newest message from the peer (what /reply and /react answer).
    var newestIncomingID: String? {
        entries.last { if case .incoming = $0.kind { return !$0.deleted } else { return false } }?.id
    }

    /// This user's newest message not deleted (what /edit and /delete change).
    var newestOwnID: String? {
        entries.last { $0.kind == .outgoing && !$0.deleted }?.id
    }

    /// What a /reply, /react (`own: false`) or /edit, /delete (`own: true`) acts on: the
    /// message numbered `number`, else the newest that fits. `.failure` is the notice to show.
    func target(_ number: Int?, own: Bool, verb: String) -> Result<String, TargetMissing> {
        guard let number else {
            let id = own ? newestOwnID : newestIncomingID
            return id.map { .success($0) }
                ?? .failure(TargetMissing(own ? "you have no message here to \(verb)" : "nothing to \(verb) yet"))
        }
        guard let entry = entries.last(where: { $0.number == number }), let id = entry.id else {
            return .failure(TargetMissing("no message [\(number)] on screen; the number is shown beside each message"))
        }
        if entry.deleted { return .failure(TargetMissing("message [\(number)] was deleted")) }
        if own && entry.kind != .outgoing {
            return .failure(TargetMissing("message [\(number)] is not yours: you can only \(verb) your own"))
        }
        return .success(id)
    }

    /// Why a /command found no message to act on.
    struct TargetMissing: Error, Equatable {
        var notice: String
        init(_ notice: String) { self.notice = notice }
    }

    /// A file transfer's line (`📎 report.pdf (1.0 MiB) to bob: offered`), shown once per
    /// state. Returns whether it was shown.
    @discardableResult
    mutating func transfer(_ t: FileTransferInfo, at time: Int) -> Bool {
        guard transferStates[t.id] != t.state else { return false }
        if transferStates[t.id] == nil {
            transferOrder.append(t.id)
            if transferOrder.count > Self.maxTransfersRemembered {
                transferStates[transferOrder.removeFirst()] = nil
            }
        }
        transferStates[t.id] = t.state
        notice(ChatAttachment.line(t), at: time)
        return true
    }

    /// Opening the chat: the history page and the conversation's file transfers, in time
    /// order (transfers older than the page's oldest message stay out, as older messages
    /// do; with a partial page, `complete`, all of them are shown).
    mutating func addHistory(_ messages: [MessageInfo], transfers: [FileTransferInfo], complete: Bool) {
        let since = complete ? Int.min : (messages.map(\.createdAt).min() ?? Int.min)
        var items: [(time: Int, message: MessageInfo?, transfer: FileTransferInfo?)] =
            messages.map { ($0.createdAt, $0, nil) }
        items += transfers.filter { $0.createdAt >= since }.map { ($0.createdAt, nil, $0) }
        for item in items.enumerated().sorted(by: {
            ($0.element.time, $0.offset) < ($1.element.time, $1.offset)
        }).map(\.element) {
            if let m = item.message {
                add(m)
            } else if let t = item.transfer {
                transfer(t, at: t.createdAt)
            }
        }
    }

    mutating func notice(_ text: String, at time: Int) {
        append(ChatEntry(id: nil, kind: .notice, time: time, body: text, mark: nil))
    }

    /// A delivery or read event for message `id`.
    mutating func mark(_ id: String, _ mark: ChatEntry.Mark) {
        if let i = entries.lastIndex(where: { $0.id == id }) {
            entries[i].mark = (entries[i].mark ?? .queued).advanced(to: mark)
        } else if early.count < Self.maxEarlyMarks {
            early[id] = (early[id] ?? .queued).advanced(to: mark)
        }
    }

    private mutating func append(_ entry: ChatEntry) {
        entries.append(entry)
        if entries.count > Self.maxEntries { entries.removeFirst(entries.count - Self.maxEntries) }
    }
}
