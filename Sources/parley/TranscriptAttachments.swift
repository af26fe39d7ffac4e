import ParleyControlProtocol

/// `parley read` shows a conversation's file transfers among its messages, at their time,
/// as the chat view does: a caption without its file reads as a message about nothing.
/// Pure: the page, the transfers and the conversation go in, the lines in order come out.
enum TranscriptAttachments {
    /// Transfers read for one page (newest first from the daemon).
    static let transfersRead = 200

    /// Which transfers belong: one peer's (outside rooms), one room's, or all.
    enum Scope: Equatable {
        case peer(fingerprint: String)
        case room(id: String)
        case everything
    }

    /// The page's lines with the transfers of `scope` whose time falls inside the page:
    /// from its first message (or the beginning, when nothing is older) to its last (or
    /// the end, when nothing is newer).
    static func lines(
        page: MessagesListResult, transfers: [FileTransferInfo], scope: Scope, showID: Bool
    ) -> [String] {
        let from = page.olderCursor == nil ? Int.min : (page.messages.first?.createdAt ?? Int.min)
        let to = page.newerCursor == nil ? Int.max : (page.messages.last?.createdAt ?? Int.max)
        let shown = transfers.filter { t in
            guard (from...to).contains(t.createdAt) else { return false }
            switch scope {
            case .peer(let fingerprint): return t.room == nil && t.peer == fingerprint
            case .room(let id): return t.room == id
            case .everything: return true
            }
        }
        var items: [(time: Int, order: Int, line: String)] = page.messages.enumerated().map {
            ($0.element.createdAt, $0.offset, HumanFormat.message($0.element, showID: showID))
        }
        items += shown.enumerated().map {
            ($0.element.createdAt, page.messages.count + $0.offset, line($0.element))
        }
        return items.sorted { ($0.time, $0.order) < ($1.time, $1.order) }.map(\.line)
    }

    /// `[14:05] 📎 bob sends report.pdf (1.0 MiB): completed → /home/…/report.pdf`.
    static func line(_ t: FileTransferInfo) -> String {
        "[\(HumanFormat.time(t.createdAt))] " + ChatAttachment.line(t)
    }
}
