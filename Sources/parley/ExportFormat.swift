import Foundation
import ParleyControlProtocol

/// One message in `parley export --format json`: one object per line, keys sorted. The
/// keys are documented in docs/CONTROL.md and kept stable even if `MessageInfo` grows.
struct ExportedMessage: Codable, Equatable {
    /// The message's position in the exporting node's log (ascending in the file).
    var cursor: Int
    var id: String
    /// "in" or "out", seen from the exporting node.
    var direction: String
    /// The other party of the conversation: fingerprint and display name.
    var peer: String
    var peerName: String
    var from: String
    var fromName: String
    var to: String
    var toName: String
    var sequence: Int
    /// Unix milliseconds, the sender's clock.
    var createdAt: Int
    /// "queued", "delivered" (outgoing) or "received" (incoming).
    var state: String
    var deliveredAt: Int?
    var readAt: Int?
    var body: String
    /// The room of a room message (`{"id","name","afterRemoval"}`), null for a direct message.
    var room: MessageRoom?
    /// Id of the message this one replies to; null if none.
    var replyTo: String?
    /// Unix milliseconds (exporting node's clock) of the latest edit / of the deletion
    /// for everyone (then `body` is ""); null if none.
    var editedAt: Int?
    var deletedAt: Int?
    /// Reaction texts with their counts, e.g. {"👍": 2}.
    var reactions: [String: Int]

    init(_ m: MessageInfo) {
        cursor = m.cursor
        id = m.id
        direction = m.direction.rawValue
        let incoming = m.direction == .incoming
        peer = incoming ? m.from : m.to
        peerName = incoming ? m.fromName : m.toName
        from = m.from
        fromName = m.fromName
        to = m.to
        toName = m.toName
        sequence = m.sequence
        createdAt = m.createdAt
        state = m.state.rawValue
        deliveredAt = m.deliveredAt
        readAt = m.readAt
        body = m.body
        room = m.room
        replyTo = m.replyTo?.id
        editedAt = m.editedAt
        deletedAt = m.deletedAt
        reactions = Dictionary(m.reactions.map { ($0.reaction, $0.fromNames.count) }, uniquingKeysWith: +)
    }

    enum CodingKeys: String, CodingKey {
        case cursor, id, direction, peer, peerName, from, fromName, to, toName, sequence, createdAt, state
        case deliveredAt, readAt, body, room, replyTo, editedAt, deletedAt, reactions
    }

    init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        cursor = try c.decode(Int.self, forKey: .cursor)
        id = try c.decode(String.self, forKey: .id)
        direction = try c.decode(String.self, forKey: .direction)
        peer = try c.decode(String.self, forKey: .peer)
        peerName = try c.decode(String.self, forKey: .peerName)
        from = try c.decode(String.self, forKey: .from)
        fromName = try c.decode(String.self, forKey: .fromName)
        to = try c.decode(String.self, forKey: .to)
        toName = try c.decode(String.self, forKey: .toName)
        sequence = try c.decode(Int.self, forKey: .sequence)
        createdAt = try c.decode(Int.self, forKey: .createdAt)
        state = try c.decode(String.self, forKey: .state)
        deliveredAt = try c.decodeIfPresent(Int.self, forKey: .deliveredAt)
        readAt = try c.decodeIfPresent(Int.self, forKey: .readAt)
        body = try c.decode(String.self, forKey: .body)
        room = try c.decodeIfPresent(MessageRoom.self, forKey: .room)
        replyTo = try c.decodeIfPresent(String.self, forKey: .replyTo)
        editedAt = try c.decodeIfPresent(Int.self, forKey: .editedAt)
        deletedAt = try c.decodeIfPresent(Int.self, forKey: .deletedAt)
        reactions = try c.decodeIfPresent([String: Int].self, forKey: .reactions) ?? [:]
    }

    func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(cursor, forKey: .cursor)
        try c.encode(id, forKey: .id)
        try c.encode(direction, forKey: .direction)
        try c.encode(peer, forKey: .peer)
        try c.encode(peerName, forKey: .peerName)
        try c.encode(from, forKey: .from)
        try c.encode(fromName, forKey: .fromName)
        try c.encode(to, forKey: .to)
        try c.encode(toName, forKey: .toName)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(state, forKey: .state)
        try c.encode(deliveredAt, forKey: .deliveredAt)  // null, not absent, when nil
        try c.encode(readAt, forKey: .readAt)
        try c.encode(body, forKey: .body)
        try c.encode(room, forKey: .room)  // null for a direct message
        try c.encode(replyTo, forKey: .replyTo)
        try c.encode(editedAt, forKey: .editedAt)
        try c.encode(deletedAt, forKey: .deletedAt)
        try c.encode(reactions, forKey: .reactions)
    }
}

/// The readable transcript of `parley export --format text`.
enum TranscriptFormat {
    /// `2025-03-01 14:05:33  alice → bob: hello`, continuation lines of the body indented
    /// under its first character; outgoing messages end with their state. Peer-supplied
    /// text is made safe to print (control characters become U+FFFD).
    static func lines(_ m: MessageInfo, time: (Int) -> String) -> [String] {
        // A room message: `#room alice: ...` (its recipients are the room's members).
        let head =
            m.room.map { "\(time(m.createdAt))  #\(Terminal.line($0.name)) \(Terminal.line(m.fromName)): " }
            ?? "\(time(m.createdAt))  \(Terminal.line(m.fromName)) → \(Terminal.line(m.toName)): "
        var body = Terminal.multiline(HumanFormat.conversationBody(m)).split(
            separator: "\n", omittingEmptySubsequences: false
        )
        .map(String.init)
        if !m.reactions.isEmpty {
            body.append(
                m.reactions.map { "\(Terminal.line($0.reaction)) \($0.fromNames.count)" }.joined(separator: "  "))
        }
        if m.direction == .outgoing {
            let state = m.readAt != nil ? "read" : m.state.rawValue
            body[body.count - 1] += "  [\(state)]"
        }
        let indent = String(repeating: " ", count: head.count)
        return [head + body[0]] + body.dropFirst().map { indent + $0 }
    }

    /// The heading of a transcript.
    static func header(me: String, peer: String?, exportedAt: String) -> [String] {
        let what =
            peer.map { $0.hasPrefix("#") ? "room \(Terminal.line($0))" : "conversation with \(Terminal.line($0))" }
            ?? "all conversations and rooms"
        return ["Parley transcript: \(what), as kept by \(Terminal.line(me)); exported \(exportedAt).", ""]
    }

    /// Local date and time with seconds.
    static func timestamp(_ unixMilliseconds: Int, timeZone: TimeZone = .current) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = timeZone
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.string(from: Date(timeIntervalSince1970: Double(unixMilliseconds) / 1000))
    }
}
