import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the receive quota (issue 15) needs to know before it judges a read's chats: each
/// sender's standing (stranger or correspondent), what it and everyone together have
/// stored, what all strangers together have stored, and the strangers' shared intake rate.
/// The counts are store queries, so they are cached here and kept current as messages are
/// stored; `countsChanged` forgets them when the user deletes messages. The verdicts
/// themselves are `ReceiveQuota.decide`'s (ParleyNodeCore); `Node+Quota.swift` feeds it.
///
/// Its state is its own and lives on the node's event loop (the loop is its lock).
final class ReceiveQuotaDriver {
    /// The counts' source: the node's `Store`; a unit test stands a failing one here to
    /// check that a count the store cannot give defers what was being judged.
    var store: any ReceiveQuotaStore
    private let directory: PeerDirectory
    /// The stored usage per peer and in total, the known correspondents, the strangers'
    /// usage and intake rate.
    private(set) var cache = QuotaCache()

    init(store: any ReceiveQuotaStore, directory: PeerDirectory) {
        self.store = store
        self.directory = directory
    }

    /// A stranger, or a correspondent (verified, or written to by the user). Once one, a
    /// peer stays one in the cache until the user deletes messages (`countsChanged`).
    func standing(of sender: IdentityPublicKey) -> ReceiveQuota.Standing {
        if cache.correspondents.contains(sender) { return .correspondent }
        // A store that cannot tell makes it a stranger this time (the smaller allowance: an
        // error never widens what is taken in); it is asked again next time.
        let isCorrespondent =
            directory.peer(sender)?.trust == .verified || ((try? store.hasWritten(to: sender)) ?? false)
        guard isCorrespondent else { return .stranger }
        if cache.correspondents.count >= NodeLimits.maxSessions { cache.correspondents.removeAll() }
        cache.correspondents.insert(sender)
        cache.strangers = nil  // it may have been counted as a stranger: count again
        return .correspondent
    }

    /// The stored usage of `sender` and of everyone, from the cache or counted once.
    func usage(of sender: IdentityPublicKey) throws(StoreError) -> (peer: ReceiveQuota.Usage, total: ReceiveQuota.Usage)
    {
        let total: ReceiveQuota.Usage
        if let t = cache.total {
            total = t
        } else {
            let t = try store.incomingUsageTotal()
            total = ReceiveQuota.Usage(messages: t.messages, bytes: t.bytes)
            cache.total = total
        }
        if let u = cache.perPeer[sender] { return (u, total) }
        // Bounded: one entry per peer that sent something; beyond the session cap the
        // cache starts again (a count is one indexed query).
        if cache.perPeer.count >= NodeLimits.maxSessions { cache.perPeer.removeAll() }
        let u = try store.incomingUsage(from: sender)
        let peer = ReceiveQuota.Usage(messages: u.messages, bytes: u.bytes)
        cache.perPeer[sender] = peer
        return (peer, total)
    }

    /// File bytes taken in from `sender` and from everyone (transfers accepted or completed),
    /// counted each time (a file offer is rare; the count is one indexed query).
    func fileBytes(of sender: IdentityPublicKey) throws(StoreError) -> (peer: Int, total: Int) {
        (try store.incomingFileBytes(from: sender), try store.incomingFileBytes(from: nil))
    }

    /// What all strangers together have stored (issue 29, M2), from the cache or counted once.
    func strangersUsage() throws(StoreError) -> ReceiveQuota.Usage {
        if let s = cache.strangers { return s }
        let u = try store.incomingUsageFromStrangers()
        let usage = ReceiveQuota.Usage(messages: u.messages, bytes: u.bytes)
        cache.strangers = usage
        return usage
    }

    /// Strangers' shared rate (created full on first use).
    func strangerIntake(now: MonotonicInstant) -> StrangerIntake { cache.strangerIntake ?? StrangerIntake(now: now) }

    /// The rate after a read's final verdicts took from it.
    func strangerIntakeTaken(_ intake: StrangerIntake) { cache.strangerIntake = intake }

    /// Counts newly stored messages against the cached usage.
    func stored(_ bodies: [Int], from sender: IdentityPublicKey) {
        let added = ReceiveQuota.Usage(messages: bodies.count, bytes: bodies.reduce(0, +))
        if let u = cache.perPeer[sender] { cache.perPeer[sender] = u + added }
        if let t = cache.total { cache.total = t + added }
        if let s = cache.strangers, !cache.correspondents.contains(sender) {
            cache.strangers = s + added
        }
    }

    /// Forgets the counts after the user deleted stored messages (the strangers' rate stays).
    func countsChanged() { cache = QuotaCache(strangerIntake: cache.strangerIntake) }
}

/// The stored usage the quota needs, cached per peer (the counts are queries).
struct QuotaCache {
    var perPeer: [IdentityPublicKey: ReceiveQuota.Usage] = [:]
    /// Senders known to be correspondents (the larger allowance); strangers are looked up
    /// again each time, so the user's first message to one counts at once.
    var correspondents: Set<IdentityPublicKey> = []
    var total: ReceiveQuota.Usage?
    /// What all strangers together have stored (nil: count again).
    var strangers: ReceiveQuota.Usage?
    /// Strangers' shared rate (created full on first use).
    var strangerIntake: StrangerIntake?
}
