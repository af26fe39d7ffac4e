import ParleyCore

/// Who is told whose address (docs/PROTOCOL.md "Address gossip"). Pure: the driver passes
/// in what it knows (who is a contact, which sessions are up, the wall clock) and sends
/// what this returns.
///
/// A node keeps the newest signed address record of each contact: the contact's own, from
/// its sessions, or relayed by another contact. It gives a record about X to a session
/// peer P only when
/// - P is a contact of ours (trusted: pinned or verified, not blocked, held or replaced),
/// - X is a contact of ours and X is not P,
/// - P's `contactTags` of this session show that P already holds X's identity key, and
/// - the record is fresh (`GossipLimits.maxRecordAgeMs`).
/// So a stranger learns nothing, and a contact learns the address only of people whose
/// key it has anyway (who could recognise their private presence token on the LAN, too).
public struct AddressGossip: Sendable {
    public enum Verdict: Sendable, Equatable {
        /// New: remember and dial its addresses, relay it to those entitled.
        case accepted
        /// Not newer than the record we hold (a relay of the same or an older one).
        case notNewer
        /// Older than `maxRecordAgeMs`.
        case stale
        /// Dated beyond `maxFutureSkewMs` ahead of our clock.
        case futureDated
        /// About someone we do not know: we keep no addresses of strangers.
        case notAContact
        /// About this node itself.
        case aboutUs
        /// Relayed by a peer that is not our contact (only contacts gossip).
        case fromStranger
        /// The session already sent `maxRecordsPerSession` records.
        case overSessionLimit
    }

    public let own: IdentityPublicKey
    public private(set) var records: [IdentityPublicKey: SignedAddressRecord] = [:]
    /// The contact tags each session peer sent (dropped when its session ends).
    private var tags: [IdentityPublicKey: ContactTags] = [:]
    /// What each session peer has been sent (subject → issuedAt), so nothing is sent twice.
    private var sent: [IdentityPublicKey: [IdentityPublicKey: UInt64]] = [:]
    private var receivedCount: [IdentityPublicKey: Int] = [:]
    /// Records refused as `notAContact`, with when they came (`GossipLimits.maxEarlyRecords`):
    /// judged again by `reconsiderEarly` when the node's co-members change.
    private var early: [IdentityPublicKey: (record: SignedAddressRecord, from: IdentityPublicKey, at: UInt64)] = [:]

    public init(own: IdentityPublicKey) { self.own = own }

    /// Judges a record that `peer`'s session delivered (its signature is already checked by
    /// the decoder). `isContact`: the store's standing of an identity.
    public mutating func received(
        _ record: SignedAddressRecord, from peer: IdentityPublicKey,
        isContact: (IdentityPublicKey) -> Bool, nowMs: UInt64
    ) -> Verdict {
        let n = receivedCount[peer, default: 0]
        guard n < GossipLimits.maxRecordsPerSession else { return .overSessionLimit }
        receivedCount[peer] = n + 1
        if record.identity == own { return .aboutUs }
        if record.identity != peer, !isContact(peer) { return .fromStranger }
        guard isContact(record.identity) else {
            keepEarly(record, from: peer, nowMs: nowMs)
            return .notAContact
        }
        if let v = freshness(record, nowMs: nowMs) { return v }
        return take(record, from: peer)
    }

    private mutating func take(_ record: SignedAddressRecord, from peer: IdentityPublicKey) -> Verdict {
        if let held = records[record.identity], held.issuedAt >= record.issuedAt { return .notNewer }
        if records[record.identity] == nil, records.count >= GossipLimits.maxKeptRecords,
            let oldest = records.min(by: { $0.value.issuedAt < $1.value.issuedAt })?.key
        {
            records[oldest] = nil
        }
        records[record.identity] = record
        // The peer that gave it to us has it: never echo it back.
        sent[peer, default: [:]][record.identity] = record.issuedAt
        return .accepted
    }

    private mutating func keepEarly(_ record: SignedAddressRecord, from peer: IdentityPublicKey, nowMs: UInt64) {
        early = early.filter { nowMs < $0.value.at &+ GossipLimits.earlyRecordLifetimeMs }
        if let held = early[record.identity], held.record.issuedAt >= record.issuedAt { return }
        if early[record.identity] == nil, early.count >= GossipLimits.maxEarlyRecords,
            let oldest = early.min(by: { $0.value.at < $1.value.at })?.key
        {
            early[oldest] = nil
        }
        early[record.identity] = (record, peer, nowMs)
    }

    /// Records refused earlier as `notAContact` whose subject `isContact` now accepts (it
    /// became a co-member): taken now, as if they had just arrived. The caller stores and
    /// dials them like any accepted record.
    public mutating func reconsiderEarly(isContact: (IdentityPublicKey) -> Bool, nowMs: UInt64)
        -> [(record: SignedAddressRecord, from: IdentityPublicKey)]
    {
        early = early.filter { nowMs < $0.value.at &+ GossipLimits.earlyRecordLifetimeMs }
        var taken: [(record: SignedAddressRecord, from: IdentityPublicKey)] = []
        for subject in early.keys.sorted(by: { $0.hex < $1.hex }) where isContact(subject) {
            guard let e = early.removeValue(forKey: subject), freshness(e.record, nowMs: nowMs) == nil,
                take(e.record, from: e.from) == .accepted
            else { continue }
            taken.append((e.record, e.from))
        }
        return taken
    }

    /// nil when the record's date is acceptable now.
    public static func freshness(_ record: SignedAddressRecord, nowMs: UInt64) -> Verdict? {
        if record.issuedAt > nowMs &+ GossipLimits.maxFutureSkewMs { return .futureDated }
        if nowMs > record.issuedAt &+ GossipLimits.maxRecordAgeMs { return .stale }
        return nil
    }

    private func freshness(_ record: SignedAddressRecord, nowMs: UInt64) -> Verdict? {
        Self.freshness(record, nowMs: nowMs)
    }

    /// `peer` told us which identities it holds (its session's `contactTags`).
    public mutating func tagsReceived(_ contactTags: ContactTags, from peer: IdentityPublicKey) {
        tags[peer] = contactTags
    }

    /// The records to send now: to each peer in `sessions` (those with a session up that
    /// announced `addressGossip`) every fresh record it is entitled to and has not had.
    /// Marks them sent. Sorted for a deterministic order.
    ///
    /// Entitled: a contact `p` gets the record of a contact `x` its tags say it holds; and
    /// `p` gets the record of `x` whenever `sharedRoom(p, x)` (room sync, issue 30: both are
    /// joined members, now, of a room this node has joined: co-members reach each other
    /// without being each other's contacts, and stop learning of each other on removal).
    public mutating func deliveries(
        sessions: [IdentityPublicKey], isContact: (IdentityPublicKey) -> Bool,
        sharedRoom: (IdentityPublicKey, IdentityPublicKey) -> Bool = { _, _ in false }, nowMs: UInt64
    ) -> [(to: IdentityPublicKey, record: SignedAddressRecord)] {
        var out: [(to: IdentityPublicKey, record: SignedAddressRecord)] = []
        let subjects = records.keys.sorted { $0.hex < $1.hex }
        for p in sessions.sorted(by: { $0.hex < $1.hex }) {
            let theirTags = isContact(p) ? tags[p] : nil
            var already = sent[p, default: [:]]
            var count = 0
            for x in subjects where x != p && count < GossipLimits.maxRelayedPerSession {
                guard let r = records[x], already[x] != r.issuedAt, freshness(r, nowMs: nowMs) == nil,
                    (theirTags?.contains(x) == true && isContact(x)) || sharedRoom(p, x)
                else { continue }
                already[x] = r.issuedAt
                count += 1
                out.append((to: p, record: r))
            }
            sent[p] = already
        }
        return out
    }

    /// The session with `peer` ended: its tags and what it was sent are forgotten (the next
    /// session sends new tags with a new salt, and gets the records again).
    public mutating func sessionEnded(_ peer: IdentityPublicKey) {
        tags[peer] = nil
        sent[peer] = nil
        receivedCount[peer] = nil
    }

    /// A contact was blocked, forgotten or replaced: its record is dropped.
    public mutating func forget(_ identity: IdentityPublicKey) {
        records[identity] = nil
        sessionEnded(identity)
    }

    /// Whether `peer` sent tags in its current session (for tests and doctor).
    public func hasTags(from peer: IdentityPublicKey) -> Bool { tags[peer] != nil }
}
