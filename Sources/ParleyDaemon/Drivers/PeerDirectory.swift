import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The pinned peers as the node reads them: every record, by identity, and the name
/// clashes among them, read from the store once and kept until a peer record is written
/// (through this directory, or elsewhere and then `invalidate()`d). It answers the
/// questions asked of them on every `send` and session: which peer a typed name means
/// (`PeerNameResolution`), what a record stands for in the trust decision
/// (`KnownPeer.Standing`), and who is a stranger to the session table.
///
/// Its caches are its own and live on the node's event loop (the loop is its lock).
final class PeerDirectory {
    /// Only the peer concern of the store (`PeerStore`).
    let store: any PeerStore
    /// This node's own name: a peer whose name looks like it is a clash too.
    var myName: String {
        didSet { if myName != oldValue { clashes = nil } }
    }

    private var all: [PeerRecord]? {
        didSet {
            byIdentity = nil
            clashes = nil
            resolved.removeAll()
        }
    }
    private var byIdentity: [IdentityPublicKey: PeerRecord]?
    private var clashes: [IdentityPublicKey: NameClashes.Clash]?
    /// Queries `resolve` found one peer for, with that peer, until the records change: a
    /// pipelining client names the same peer in every `messages.send`, and resolving it
    /// anew (an entry per record, lowercasing, fingerprints) was ~6,000 instructions per
    /// message. A pure function of the records and the query, so it cannot go stale while
    /// `all` stands; bounded in count and in each query's length (a local client may name
    /// many peers, or write long names).
    private var resolved: [String: PeerRecord] = [:]
    private static let maxResolvedQueries = 256
    private static let maxResolvedQueryBytes = 256
    /// When unused identities were last expired.
    private var lastExpiry: MonotonicInstant?

    init(store: any PeerStore, myName: String) {
        self.store = store
        self.myName = myName
    }

    /// A peer record was written other than through this directory: read them again.
    func invalidate() { all = nil }

    /// Forgets keys pinned on first use (or held) that never exchanged a message and were
    /// not seen since `lastSeenBefore` (Unix ms), except `keep` (peers online now, and
    /// co-members of joined rooms; asked only when due), at most
    /// once per `interval` of the monotonic clock. Returns how many were forgotten (nil:
    /// not due yet).
    func expireUnused(
        now: MonotonicInstant, every interval: Duration, lastSeenBefore: Int64,
        keep: @autoclosure () -> Set<IdentityPublicKey>
    ) throws(StoreError) -> Int? {
        guard lastExpiry.map({ now - $0 >= interval }) ?? true else { return nil }
        lastExpiry = now
        let expired = try store.expireUnusedPeers(lastSeenBefore: lastSeenBefore, keep: keep())
        if !expired.isEmpty { all = nil }
        return expired.count
    }

    // MARK: Records

    func peers() throws(StoreError) -> [PeerRecord] {
        if let all { return all }
        let read = try store.peers()
        all = read
        return read
    }

    /// A pinned peer by identity.
    func peer(_ identity: IdentityPublicKey) -> PeerRecord? {
        if byIdentity == nil, let every = try? peers() {
            byIdentity = Dictionary(every.map { ($0.identity, $0) }, uniquingKeysWith: { a, _ in a })
        }
        return byIdentity?[identity]
    }

    /// The first pinned, not blocked peer (in the store's order) for which `matches`
    /// holds: who an advertisement's presence token or fingerprint names.
    func firstUnblocked(where matches: (IdentityPublicKey) -> Bool) -> IdentityPublicKey? {
        for rec in (try? peers()) ?? [] where rec.trust != .blocked {
            if matches(rec.identity) { return rec.identity }
        }
        return nil
    }

    /// Who a private presence token names (docs/PROTOCOL.md "Private presence"): this
    /// node (`me`), the first pinned, not blocked peer it matches, or nobody. One HMAC per
    /// peer and epoch: a few hundred contacts cost well under a millisecond per advert.
    func presenceMatch(
        _ presence: (nonce: [UInt8], token: [UInt8]), me: IdentityPublicKey, networkKey: [UInt8]?,
        unixSeconds: UInt64
    ) -> AdvertisementTriage.PresenceMatch {
        let epoch = PresenceToken.epoch(atUnixSeconds: unixSeconds)
        func names(_ key: IdentityPublicKey) -> Bool {
            PresenceToken.matches(
                presence.token, nonce: presence.nonce, identity: key, networkKey: networkKey, epoch: epoch)
        }
        if names(me) { return .ours }
        return firstUnblocked(where: names).map { .contact($0) } ?? .nobody
    }

    /// Whether a pinned, not blocked peer has this compact fingerprint.
    func isKnown(compactFingerprint: String) -> Bool {
        firstUnblocked { Fingerprint($0).compact == compactFingerprint } != nil
    }

    func upsert(_ rec: PeerRecord) throws(StoreError) {
        all = nil
        try store.upsertPeer(rec)
    }

    func setTrust(identity: IdentityPublicKey, _ trust: TrustState) throws(StoreError) {
        all = nil
        try store.setTrust(identity: identity, trust)
    }

    /// What became of recording a sighting (`touch`).
    enum Sighting: Equatable {
        case recorded
        /// The store could not write it: the record keeps its older time and address.
        case notRecorded(StoreError)
    }

    /// `peer` was seen now (a session came up), dialled at `address` if we dialled it. The
    /// cache is not dropped for it: a session costs one write, not a reload of every record.
    func touch(_ peer: IdentityPublicKey, at nowMs: Int64, address: String?) -> Sighting {
        do {
            try store.touchPeer(identity: peer, at: nowMs, address: address)
            return .recorded
        } catch {
            return .notRecorded(error)
        }
    }

    // MARK: Decisions about them (ParleyNodeCore)

    /// The record as the trust decision sees it.
    static func knownPeer(_ rec: PeerRecord) -> KnownPeer {
        KnownPeer(
            identity: rec.identity, displayName: rec.displayName,
            cardSequence: UInt64(max(0, rec.cardSequence)), card: rec.card,
            standing: KnownPeer.Standing(
                blocked: rec.trust == .blocked, replaced: rec.replacedBy != nil,
                awaitingApproval: rec.trust == .pending))
    }

    /// A stranger or a known peer, for the session table's eviction order.
    func sessionStanding(of peer: IdentityPublicKey) -> SessionTable<ObjectIdentifier>.Standing {
        let record = self.peer(peer)
        return .of(pinned: record != nil, verified: record?.trust == .verified) {
            try? self.store.hasExchangedMessages(with: peer)
        }
    }

    /// The live peer `query` names (`PeerNameResolution`); a shared name is an error that
    /// lists every peer it could mean.
    func resolve(_ query: String) throws(NodeError) -> PeerRecord {
        let every: [PeerRecord]
        do { every = try peers() } catch { throw .storage(error) }
        if let known = resolved[query] { return known }
        var records: [PeerRecord] = []
        var entries: [PeerNameResolution.Entry] = []
        records.reserveCapacity(every.count)
        entries.reserveCapacity(every.count)
        for rec in every {
            records.append(rec)
            entries.append(
                .init(
                    identity: rec.identity, displayName: rec.displayName, nickname: rec.nickname,
                    replaced: rec.replacedBy != nil))
        }
        switch PeerNameResolution.resolve(query, in: entries) {
        case .found(let i):
            if query.utf8.count <= Self.maxResolvedQueryBytes {
                if resolved.count >= Self.maxResolvedQueries { resolved.removeAll(keepingCapacity: true) }
                resolved[query] = records[i]
            }
            return records[i]
        case .ambiguous(let found): throw .peerAmbiguous(query, found.map { records[$0] })
        case .notFound: throw .peerNotFound(query)
        }
    }

    /// Which live peers' labels (nickname, or self-asserted name) look alike, or like ours.
    func nameClashes() -> [IdentityPublicKey: NameClashes.Clash] {
        if let clashes { return clashes }
        let entries = ((try? peers()) ?? []).filter { $0.replacedBy == nil }.map { rec in
            NameClashes.Entry(identity: rec.identity, selfAssertedName: rec.displayName, nickname: rec.nickname)
        }
        let found = NameClashes.find(entries, myName: myName)
        clashes = found
        return found
    }
}
