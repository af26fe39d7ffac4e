import ParleyCore

/// Room messages from an author this node does not know as a joined member of the room yet
/// (`RoomDistribution.MessageVerdict.hold`: the operation that makes it one may still be on
/// its way), per author, unacknowledged: the author keeps them queued and sends them again
/// on its next session, so holding them only saves that round trip and nothing is lost by
/// not holding. Bounded per author and in all (`Limits`); released when the room changes
/// and the verdict is no longer `hold`. Pure state: the room driver stores what it releases.
public struct HeldRoomChats: Sendable {
    public struct Limits: Sendable {
        /// Messages held per author: about one send window.
        public var perAuthor: Int
        /// Body bytes held per author, and over all authors.
        public var bytesPerAuthor: Int
        public var bytes: Int

        public init(perAuthor: Int, bytesPerAuthor: Int, bytes: Int) {
            self.perAuthor = perAuthor
            self.bytesPerAuthor = bytesPerAuthor
            self.bytes = bytes
        }
    }

    public let limits: Limits
    private var byAuthor: [IdentityPublicKey: [RoomChatRecord]] = [:]
    /// Body bytes held over all authors (kept, not summed per call).
    public private(set) var totalBytes = 0

    public init(limits: Limits) { self.limits = limits }

    /// The messages held from `author`, oldest first.
    public func held(from author: IdentityPublicKey) -> [RoomChatRecord] { byAuthor[author] ?? [] }

    /// Every author with held messages.
    public var authors: [IdentityPublicKey] { Array(byAuthor.keys) }

    /// Holds what fits of `list` (in order; the first that does not fit ends it, so what is
    /// held is a prefix of what the author sent); an id already held, or repeated in `list`,
    /// is not held twice.
    /// Returns how many `author` has held now.
    @discardableResult
    public mutating func hold(_ list: [RoomChatRecord], from author: IdentityPublicKey) -> Int {
        var held = byAuthor.removeValue(forKey: author) ?? []
        defer { byAuthor[author] = held.isEmpty ? nil : held }
        var known = Set(held.map(\.id))
        var authorBytes = held.reduce(0) { $0 + $1.body.utf8.count }
        // An id sent twice in one read is held (and counted) once.
        for c in list where known.insert(c.id).inserted {
            let size = c.body.utf8.count
            guard held.count < limits.perAuthor, authorBytes + size <= limits.bytesPerAuthor,
                totalBytes + size <= limits.bytes
            else { break }
            held.append(c)
            authorBytes += size
            totalBytes += size
        }
        return held.count
    }

    /// Forgets what `author` has held (its session ended: it sends them again on the next
    /// one, as none was acknowledged), so an author that went away keeps no share of the
    /// bound.
    public mutating func drop(author: IdentityPublicKey) {
        guard let held = byAuthor.removeValue(forKey: author) else { return }
        totalBytes -= held.reduce(0) { $0 + $1.body.utf8.count }
    }

    /// Takes out the messages of `room` from every author whose messages may move now
    /// (`mayMove`: the verdict for that author is no longer `hold`).
    public mutating func release(room: RoomID, mayMove: (IdentityPublicKey) -> Bool)
        -> [(author: IdentityPublicKey, chats: [RoomChatRecord])]
    {
        var released: [(author: IdentityPublicKey, chats: [RoomChatRecord])] = []
        for (author, held) in byAuthor {
            let ready = held.filter { $0.roomID == room }
            guard !ready.isEmpty, mayMove(author) else { continue }
            let kept = held.filter { $0.roomID != room }
            byAuthor[author] = kept.isEmpty ? nil : kept
            totalBytes -= ready.reduce(0) { $0 + $1.body.utf8.count }
            released.append((author, ready))
        }
        return released
    }
}
