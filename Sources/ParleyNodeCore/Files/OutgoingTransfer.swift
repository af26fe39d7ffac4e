import ParleyCore

/// The sender's side of one file transfer (docs/PROTOCOL.md "Files"): what to send next on
/// the current session. Pure: the driver reads the chunks, checks them against the hash
/// list and sends them. Nothing is sent before the receiver's `fileWant` in this session,
/// and never more than `FileLimits.window` chunks beyond what the receiver confirmed.
public struct OutgoingTransfer: Sendable, Equatable {
    public enum WantError: Error, Equatable, Sendable {
        /// `from` past the last chunk: a protocol error of the receiver.
        case fromOutOfRange(UInt64)
    }

    public let chunkCount: UInt64
    /// The next chunk to send in this session; nil until the receiver's `fileWant`.
    public private(set) var next: UInt64?
    /// The receiver's latest confirmed count (`fileHave`, or the `from` of its `fileWant`).
    public private(set) var confirmed: UInt64
    /// The receiver asked for the hash list and it has not been sent yet.
    public private(set) var listOwed = false

    public init(chunkCount: UInt64, confirmed: UInt64 = 0) {
        self.chunkCount = chunkCount
        self.confirmed = min(confirmed, chunkCount)
    }

    /// The receiver's `fileWant`: restart from `from` (what was in flight is forgotten).
    public mutating func want(from: UInt64, needList: Bool) throws(WantError) {
        guard from <= chunkCount else { throw .fromOutOfRange(from) }
        next = from
        // A re-fetch may go below an earlier fileHave (never below what is durable there,
        // but we cannot know): the window slides from the want.
        confirmed = from
        listOwed = needList
    }

    /// The receiver's `fileHave`. Values below what we know are ignored (reordering cannot
    /// happen in a session, but a stale one from before a want can).
    public mutating func have(_ verified: UInt64) {
        confirmed = max(confirmed, min(verified, chunkCount))
    }

    /// The hash list was sent.
    public mutating func listSent() { listOwed = false }

    /// The chunks to send now, at most `budget`, within the window; marks them sent.
    public mutating func take(budget: Int) -> Range<UInt64> {
        guard let n = next, budget > 0 else { return 0..<0 }
        let limit = min(chunkCount, confirmed + FileLimits.window)
        guard n < limit else { return n..<n }
        let end = min(limit, n + UInt64(budget))
        next = end
        return n..<end
    }

    /// Whether a want arrived and chunks remain to be sent in the window.
    public var canSend: Bool {
        guard let n = next else { return false }
        return n < min(chunkCount, confirmed + FileLimits.window)
    }

    /// The session ended: nothing is sent until the next `fileWant`.
    public mutating func sessionEnded() {
        next = nil
        listOwed = false
    }
}
