import ParleyCore
import ParleyNodeCore
import ParleyStore

/// Trust on first use and the person's trust decisions (docs/PROTOCOL.md, "Trust"). It asks
/// `TrustDecision` what a verified card means and records what it says (pin, card update,
/// hold for approval, refuse), and performs what the person asks through the control socket
/// (verify, replace a key, accept, block, unblock, forget, nickname), each checked by a pure
/// decision first (`FingerprintConfirmation`, `KeyReplacementCheck`, `TrustAdmission`).
///
/// **A peer is its key.** A name never makes a new key stand for a known peer: a new key is
/// a new peer (a look-alike name is logged and shown, `NameClashes`); only a person replaces
/// a contact's key, by naming the new key's whole fingerprint.
///
/// - TrustDriver.swift: the handshake's trust outcome.
/// - TrustDriver+CardUpdates.swift: a card re-issued on a live session.
/// - TrustDriver+LocalAPI.swift: what the person asks.
///
/// It sees the store only as `TrustStore` (and the cached peer records through
/// `PeerDirectory`) and the node only as `TrustHost`. It lives on the node's event loop.
final class TrustDriver {
    /// The person's changes, fresh reads of one record, key history, remembered addresses.
    let store: any TrustStore
    /// The pinned peers, cached: every record write goes through it (or invalidates it),
    /// so a name resolved before a change never names a stale record.
    let directory: PeerDirectory
    /// This node's identity (the safety number is computed with it).
    let me: IdentityPublicKey
    /// Whether a key never seen is pinned or held for a person's approval.
    let newIdentities: TrustDecision.NewIdentityPolicy
    let clock: any NodeClock
    let log: Logger
    /// The node (set once it is built; it owns this driver).
    weak var host: (any TrustHost)?

    init(
        store: any TrustStore, directory: PeerDirectory, me: IdentityPublicKey,
        newIdentities: TrustDecision.NewIdentityPolicy, clock: any NodeClock, log: Logger
    ) {
        self.store = store
        self.directory = directory
        self.me = me
        self.newIdentities = newIdentities
        self.clock = clock
        self.log = log
    }

    var nowMs: Int64 { clock.wallMilliseconds() }

    // MARK: The handshake's trust outcome

    /// Whether the session with the holder of `remote` (proved by the handshake) is kept,
    /// and what is recorded: a new key pinned or held, a newer card pinned. A store failure
    /// refuses the session (nothing is decided on a guess).
    /// - `address`: where it was reached (a dial target's address, else the connection's).
    func admit(_ remote: Card, dialTarget: DialTargetKey?, remoteAddress: String) -> TrustAdmission {
        do {
            if let rec = try store.peer(identity: remote.identityKey) {
                return try apply(
                    TrustDecision.known(PeerDirectory.knownPeer(rec), card: remote), card: remote, record: rec,
                    dialTarget: dialTarget, remoteAddress: remoteAddress)
            }
            return try apply(
                TrustDecision.newIdentity(card: remote, policy: newIdentities), card: remote, record: nil,
                dialTarget: dialTarget, remoteAddress: remoteAddress)
        } catch {
            log.error("trust store failure; refusing session", ["error": "\(error)"])
            return .storageFailure
        }
    }

    private func apply(
        _ verdict: TrustDecision.Verdict, card remote: Card, record: PeerRecord?, dialTarget: DialTargetKey?,
        remoteAddress: String
    ) throws(StoreError) -> TrustAdmission {
        switch verdict {
        case .keep:
            return .keep
        case .keepAndUpdateCard:
            // A re-issued card from the same identity: a rotation or rename, accepted (a new
            // name that looks like another peer's is logged, `pin`).
            guard let record else { return .keep }
            try pin(remote, over: record)
            return .keep
        case .pinNewPeer, .holdNewPeer:
            let held = verdict == .holdNewPeer
            let address = dialTarget?.rawValue
            let now = nowMs
            let rec = PeerRecord(
                identity: remote.identityKey, displayName: remote.displayName, hostName: remote.hostName,
                card: remote.encoded(), cardSequence: Int64(clamping: remote.sequence),
                noiseKey: remote.noiseKey, trust: held ? .pending : .pinned, firstSeen: now,
                lastSeen: now, lastAddress: address, replacedBy: nil)
            try directory.upsert(rec)
            var fields = ["peer": remote.displayName, "fingerprint": remote.fingerprint.description]
            if let clash = directory.nameClashes()[remote.identityKey] {
                // Logged and shown, never acted on: the name is the key holder's choice.
                fields["name_also_used_by"] = clash.with.map(Self.printed).joined(separator: ",")
                log.warning(
                    held
                        ? "new key held for approval; its name looks like another peer's"
                        : "new peer pinned; its name looks like another peer's: it is a different key", fields)
            } else {
                log.info(held ? "new key held for approval" : "new peer pinned", fields)
            }
            host?.emit(.newPeer(rec, address: address ?? remoteAddress))
            return held ? .heldForApproval : .keep
        case .refuse(let refusal):
            if let note = TrustAdmission.securityNote(refusal) {
                let fields = refusalFields(refusal, card: remote, record: record, remoteAddress: remoteAddress)
                host?.logAttack(key: remote.identityKey.hex, note, fields)
            }
            return TrustAdmission.refusal(refusal)
        }
    }

    /// What the security log records of a refusal.
    private func refusalFields(
        _ refusal: TrustDecision.Refusal, card remote: Card, record: PeerRecord?, remoteAddress: String
    ) -> [String: String] {
        let name = record?.displayName ?? remote.displayName
        switch refusal {
        case .replaced: return ["fingerprint": remote.fingerprint.description, "address": remoteAddress]
        case .staleCard(let presented, let pinned):
            return ["peer": name, "presented": "\(presented)", "pinned": "\(pinned)"]
        case .conflictingCard, .blocked, .awaitingApproval: return ["peer": name]
        }
    }

    /// Pins a newer card of an identity already known: what it binds (Noise key, name, host)
    /// is taken from the card; trust, nickname and history stay.
    func pin(_ card: Card, over record: PeerRecord) throws(StoreError) {
        var rec = record
        rec.card = card.encoded()
        rec.cardSequence = Int64(clamping: card.sequence)
        rec.noiseKey = card.noiseKey
        rec.displayName = card.displayName
        rec.hostName = card.hostName
        try directory.upsert(rec)
        if card.displayName != record.displayName, let clash = directory.nameClashes()[card.identityKey] {
            // A known key renamed itself like another peer: still itself, and said so.
            log.warning(
                "peer renamed itself; its new name looks like another peer's: it is a different key",
                [
                    "peer": card.displayName, "was": record.displayName,
                    "fingerprint": card.fingerprint.description,
                    "name_also_used_by": clash.with.map(Self.printed).joined(separator: ",")
                ])
        }
    }
}
