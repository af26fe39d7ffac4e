import ParleyControlProtocol

/// What reading a page marks read: per conversation shown (a peer, or a room), everything
/// up to the newest unread incoming message of it on the page. Marking "up to" also marks
/// older unread messages not shown, which is what a reader of the newest page expects
/// (unread counts clear); a reader paging back with `--before` only marks older ones.
enum ReadMarks {
    struct Mark: Hashable {
        /// A `messages.mark_read` peer selector: the sender's fingerprint, or `#` + room id.
        var selector: String
        var upTo: Int
    }

    static func marks(for messages: [MessageInfo]) -> [Mark] {
        var newest: [String: Int] = [:]
        var order: [String] = []
        for m in messages where m.direction == .incoming && m.readAt == nil {
            let selector = m.room.map { "#" + $0.id } ?? m.from
            if newest[selector] == nil { order.append(selector) }
            newest[selector] = max(newest[selector] ?? m.cursor, m.cursor)
        }
        return order.map { Mark(selector: $0, upTo: newest[$0]!) }
    }
}
