import ParleyCore
import ParleyNodeCore
import ParleyStore

#if canImport(Glibc)
    import Glibc
#endif

/// What the receive quota needs from the rest of the node: how the log names a peer, the
/// free space on the store's file system, and the events for the control side. `Node` is
/// the host (Node+Quota.swift); a test stands in for it.
protocol ReceiveQuotaHost: AnyObject {
    func displayName(of key: IdentityPublicKey) -> String
    /// Free bytes for an unprivileged writer on the store's file system, or nil if unknown.
    func freeDiskBytes() -> Int?
    func emit(_ e: NodeEvent)
}

/// The receive quota (issue 15; docs/PROTOCOL.md, "refused"): incoming chats, direct and
/// room ones, and edits, deletes and reactions (direct, or signed room changes counted
/// against their author; each a row kept, one message plus its text's bytes, issue 32)
/// are judged by `ReceiveQuota.decide` (ParleyNodeCore) before they are stored;
/// the ones over a quota, or arriving while the disk is under its floor, are answered with
/// a `refused` record instead of an ack and stay queued at the sender. At the sender, a
/// peer's refusal is recorded here (the message stays queued for the next session).
///
/// What it needs to know before it judges: each sender's standing (stranger or
/// correspondent), what it and everyone together have stored, what all strangers together
/// have stored, and the strangers' shared intake rate. The counts are store queries, so
/// they are cached here and kept current as messages are stored; `countsChanged` forgets
/// them when the user deletes messages. A count the store cannot give takes nothing: the
/// caller stores and acknowledges none of the read and closes the session (a failed count
/// is not "nothing stored").
///
/// Its state is its own and lives on the node's event loop (the loop is its lock).
final class ReceiveQuotaDriver {
    /// The counts' source: the node's `Store`; a unit test stands a failing one here to
    /// check that a count the store cannot give defers what was being judged.
    var store: any ReceiveQuotaStore
    /// Which ids are already stored, and the peer's refusals of ours.
    private let refusals: any QuotaRefusalStore
    private let directory: PeerDirectory
    /// The allowances and the disk floor (`quota_*`, `disk_floor_mib`).
    let limits: ReceiveQuota
    private let clock: any NodeClock
    private let log: Logger
    /// Refusals are logged once per sender per interval (a flood costs no more).
    private let attackLog: RateLimitedLog
    /// The node (set once it is built; it owns this driver).
    weak var host: (any ReceiveQuotaHost)?
    /// The stored usage per peer and in total, the known correspondents, the strangers'
    /// usage and intake rate.
    private(set) var cache = QuotaCache()

    init(
        store: any ReceiveQuotaStore & QuotaRefusalStore, directory: PeerDirectory, limits: ReceiveQuota,
        clock: any NodeClock, log: Logger, attackLog: RateLimitedLog? = nil
    ) {
        self.store = store
        self.refusals = store
        self.directory = directory
        self.limits = limits
        self.clock = clock
        self.log = log
        self.attackLog = attackLog ?? RateLimitedLog(logger: log, level: .warning, interval: .seconds(60))
    }

    // MARK: Judging a read

    /// For each (id, body size) of one read from `sender`: nil to store it, or why not; and
    /// the refused ids grouped by reason. Chats already stored (a resend) are never
    /// refused: they go on to be acknowledged. Throws (after logging) when the store
    /// cannot count what `sender` has stored: nothing is taken then, and the strangers'
    /// rate is left as it was.
    func judge(_ chats: [(id: MessageID, size: Int)], from sender: IdentityPublicKey)
        throws(StoreError) -> (verdicts: [RefusalReason?], refused: [(RefusalReason, [MessageID])])
    {
        guard !chats.isEmpty else { return ([], []) }
        let peerUsage: ReceiveQuota.Usage
        let totalUsage: ReceiveQuota.Usage
        let strangersUsage: ReceiveQuota.Usage
        let standing = standing(of: sender)
        let name = host?.displayName(of: sender) ?? sender.fingerprintText
        do {
            (peerUsage, totalUsage) = try usage(of: sender)
            strangersUsage = standing == .stranger ? try self.strangersUsage() : .init()
        } catch {
            // Not measurable: nothing is taken on a count nobody could make (a failed count
            // is not "nothing stored"); they stay queued at the sender.
            log.error(
                "could not count what is stored from a peer; its messages are not taken now",
                ["peer": name, "error": "\(error)"])
            throw error
        }
        let free = host?.freeDiskBytes()
        let now = clock.monotonicNow()
        // Decided on a copy of the strangers' rate: only the final verdicts take from it.
        let intake = strangerIntake(now: now)
        var trial = intake
        var verdicts = limits.decide(
            bodySizes: chats.map(\.size), peer: peerUsage, total: totalUsage, strangers: strangersUsage,
            sender: standing, freeDiskBytes: free, intake: &trial, now: now)
        if verdicts.contains(where: { $0 != nil }) {
            // Refuse only what we do not already have: a resent stored message is acked.
            // A store that cannot tell leaves them refused (the sender sends them again).
            let known = (try? refusals.storedIncomingIDs(chats.map(\.id), from: sender)) ?? []
            if !known.isEmpty {
                let fresh = chats.indices.filter { !known.contains(chats[$0].id) }
                trial = intake
                let again = limits.decide(
                    bodySizes: fresh.map { chats[$0].size }, peer: peerUsage, total: totalUsage,
                    strangers: strangersUsage, sender: standing, freeDiskBytes: free, intake: &trial, now: now)
                verdicts = [RefusalReason?](repeating: nil, count: chats.count)
                for (k, i) in fresh.enumerated() { verdicts[i] = again[k] }
            }
        }
        strangerIntakeTaken(trial)
        var refused: [RefusalReason: [MessageID]] = [:]
        for (chat, verdict) in zip(chats, verdicts) {
            if let reason = verdict { refused[reason, default: []].append(chat.id) }
        }
        for (reason, ids) in refused {
            attackLog.log(
                key: "quota:" + sender.hex, "incoming messages refused: over the receive quota",
                [
                    "peer": name, "reason": "\(reason)", "count": "\(ids.count)",
                    // The commands name the key in hex: a peer picks its own name, which may
                    // be another peer's, hold shell syntax, or carry the look-alike marker.
                    "next": Self.remedy(for: reason, standing: standing, peer: sender.hex)
                ])
        }
        return (verdicts, refused.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key, $0.value) })
    }

    /// What the user can do about what was refused, each safe to follow. Never "verify it"
    /// or "write to it" for a stranger (issue 29, L1): either makes it a correspondent (a
    /// larger allowance, its files taken in), and a key that sent a lot is the last one to
    /// trust for that. A stranger's refused messages stay queued at the sender, so nothing
    /// is lost by waiting; blocking stops it; deleting messages frees their place (the
    /// sender still has the refused ones queued, and acknowledged ones are never sent
    /// again, but the deletion cannot be undone: the person saves a copy first,
    /// `saveThenForget`); a raised limit is bounded by the config's ranges and the disk
    /// floor stays. `peer` is how the commands name the peer: the caller passes its key in
    /// hex (unambiguous, and nothing a shell reads as syntax), never its chosen name.
    static func remedy(for reason: RefusalReason, standing: ReceiveQuota.Standing, peer: String) -> String {
        switch reason {
        case .peerQuota where standing == .stranger, .strangersShare:
            "nothing is lost: the sender keeps the refused messages queued. A key you have not verified "
                + "sent more than strangers may store; if you do not know it, block it (parley trust block "
                + "\(peer)); if you think you know who it is, ask them in person, not through this key"
        case .peerQuota, .unknown:
            "nothing is lost: the sender keeps the refused messages queued. Raise "
                + "quota_verified_peer_messages / quota_verified_peer_mib in parleyd.toml, or make room: "
                + Self.saveThenForget(peer)
        case .nodeQuota:
            "nothing is lost: the senders keep the refused messages queued. Raise "
                + "quota_total_messages / quota_total_mib in parleyd.toml, or make room: "
                + Self.saveThenForget("PEER")
        case .diskFull:
            "free disk space on the state directory's file system (or lower disk_floor_mib in parleyd.toml)"
        }
    }

    /// The way to make room that loses nothing the person wants: `forget-messages` deletes
    /// the whole conversation both ways and cannot be undone, so a copy is saved to a file
    /// first (`parley export` alone writes to the terminal and, without a peer, every
    /// conversation), and checked before anything is deleted.
    static func saveThenForget(_ peer: String) -> String {
        let file = "parley-\(String(peer.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(16))).txt"
        return "save the conversation first (parley export \(peer) > \(file)), check the file, then delete it "
            + "(parley forget-messages \(peer): deletes every message with that peer, both ways, for good)"
    }

    /// Free bytes for an unprivileged writer on the file system of the file at `path`, or
    /// nil if unknown.
    static func freeBytes(onFileSystemOf path: String) -> Int? {
        var s = statvfs()
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        guard statvfs(directory.isEmpty ? "." : directory, &s) == 0 else { return nil }
        return Int(clamping: UInt64(s.f_bavail) &* UInt64(s.f_frsize))
    }

    // MARK: Our messages refused by a peer

    /// `peer` refused to store these of our messages: the refusal is recorded and reported;
    /// they stay queued for the next session. (The caller frees their window slots.)
    func refusedByPeer(_ ids: [MessageID], by peer: IdentityPublicKey, reason: RefusalReason) {
        do {
            let refusedMessages = try refusals.recordRefusal(
                ids: ids, by: peer, reason: Int(reason.rawValue), at: clock.wallMilliseconds())
            for m in refusedMessages { host?.emit(.messageRefused(m, reason)) }
            if !refusedMessages.isEmpty {
                log.warning(
                    "a peer refused to store our messages; they stay queued",
                    [
                        "peer": host?.displayName(of: peer) ?? peer.fingerprintText, "reason": reason.description,
                        "count": "\(refusedMessages.count)"
                    ])
            }
        } catch {
            log.error("could not record a refusal", ["error": "\(error)"])
        }
    }

    // MARK: The counts

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
