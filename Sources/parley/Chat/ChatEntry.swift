import ParleyControlProtocol

/// One line item of the chat view: a message or a notice from the client itself.
struct ChatEntry: Equatable {
    enum Kind: Equatable {
        case incoming(from: String)
        case outgoing
        /// Something the view says (a peer went offline, a send failed).
        case notice
    }

    /// Where an outgoing message is: … queued, ✓… some room members hold it, ✓ delivered,
    /// ✓✓ read.
    enum Mark: String, Equatable {
        case queued = "…"
        /// A room message some members hold (who: `ChatEntry.holders`), others not yet.
        case partial = "✓…"
        case delivered = "✓"
        case read = "✓✓"
    }

    /// The message id (nil for notices): delivery and read events update by it.
    var id: String?
    var kind: Kind
    /// Unix milliseconds.
    var time: Int
    var body: String
    var mark: Mark?
    /// With `.partial`: who holds it (`carol has it (1 of 2)`).
    var holders: String?
    /// Deleted for everyone: /edit and /delete pass it by.
    var deleted = false
    /// The number shown beside a message (`[3]`), for `/reply 3 …`: given in the order
    /// messages are shown, never reused while the chat runs. Nil for notices.
    var number: Int?
    /// The sender's fingerprint (incoming): its name's colour follows the key, not the
    /// name a peer chose, so an impostor named "bob" does not get bob's colour.
    var senderKey: String?
}

extension ChatEntry.Mark {
    /// How far along the message is.
    private var rank: Int {
        switch self {
        case .queued: return 0
        case .partial: return 1
        case .delivered: return 2
        case .read: return 3
        }
    }

    /// A later state never goes back: a delivery event after the read receipt keeps ✓✓.
    func advanced(to next: ChatEntry.Mark) -> ChatEntry.Mark {
        next.rank > rank ? next : self
    }
}

extension ChatEntry.Mark {
    /// The mark of an outgoing message as the daemon reports it.
    init(_ m: MessageInfo) {
        self = m.readAt != nil ? .read : m.state == .delivered ? .delivered : m.state == .partial ? .partial : .queued
    }
}
