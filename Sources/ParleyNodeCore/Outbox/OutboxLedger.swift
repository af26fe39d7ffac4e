import ParleyCore

/// What the node knows about its direct outbox without reading the store: how many
/// messages are queued per recipient (the per-peer queue limit) and the newest sequence
/// queued to each since this run started (so a pump after every ack can skip the outbox
/// query when the session already sent through it).
///
/// Counts are loaded lazily from the store (`needsCounts`/`loadCounts`) and dropped when
/// queued messages move to another recipient (`forgetAll`).
public struct OutboxLedger: Sendable {
    private var queued: [IdentityPublicKey: Int]?
    private var newestQueued: [IdentityPublicKey: Int64] = [:]

    public init() {}

    public var needsCounts: Bool { queued == nil }

    public mutating func loadCounts(_ counts: [IdentityPublicKey: Int]) { queued = counts }

    public func queuedCount(for peer: IdentityPublicKey) -> Int { queued?[peer] ?? 0 }

    /// Messages were stored for `peer`; `newestSequence` is the highest among them.
    public mutating func queued(_ count: Int, for peer: IdentityPublicKey, newestSequence: Int64) {
        queued?[peer, default: 0] += count
        newestQueued[peer] = max(newestQueued[peer] ?? newestSequence, newestSequence)
    }

    public mutating func delivered(_ count: Int, by peer: IdentityPublicKey) {
        guard count > 0 else { return }
        queued?[peer, default: 0] -= count
    }

    /// False only when the session already sent everything queued to `peer` this run.
    /// Unknown (a backlog from an earlier run): true, the pump queries.
    public func mayHaveUnsent(for peer: IdentityPublicKey, sentThrough: Int64) -> Bool {
        guard let newest = newestQueued[peer] else { return true }
        return newest > sentThrough
    }

    /// Queued messages moved to another recipient (a key change was accepted): reload.
    public mutating func forgetAll() {
        queued = nil
        newestQueued.removeAll()
    }
}
