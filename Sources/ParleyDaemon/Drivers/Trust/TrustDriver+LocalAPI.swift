import ParleyCore
import ParleyNodeCore
import ParleyStore

/// What the person asks of trust through the control socket (`trust.*`, `peers.nickname`,
/// history of a replaced key). Whoever can reach the socket is the person (the socket is
/// theirs alone, docs/CONTROL.md "Access"); what they vouch for is still checked here, not
/// only by the client that asked: a whole fingerprint, and a replacement's safety number.
extension TrustDriver {
    /// For reading history: a live key as `PeerDirectory.resolve` finds it, or else a
    /// replaced key named by its whole fingerprint (a contact's previous key, as
    /// `trust.show` lists it), whose messages stay readable after `trust.replace`.
    func resolveIncludingReplaced(_ query: String) throws(NodeError) -> PeerRecord {
        do {
            return try directory.resolve(query)
        } catch {
            guard case .peerNotFound = error, case .whole(let whole) = FingerprintConfirmation.read(query) else {
                throw error
            }
            let all: [PeerRecord]
            do { all = try directory.peers() } catch { throw .storage(error) }
            guard
                let previous = all.first(where: {
                    $0.replacedBy != nil && FingerprintConfirmation.names(whole, $0.identity)
                })
            else { throw error }
            return previous
        }
    }

    /// Marks a peer verified after a person compared fingerprints: the whole one, its own.
    func verify(_ peer: PeerRecord, fingerprint given: String) throws(NodeError) -> PeerRecord {
        switch FingerprintConfirmation.confirm(given, is: peer.identity) {
        case .whole: break
        case .mismatch: throw .fingerprintMismatch(expected: Self.printed(peer.identity), given: given)
        case .tooShort(let needed): throw .fingerprintTooShort(given: given, needed: needed)
        }
        return try setTrust(peer, .verified)
    }

    /// A person replaced a contact's key (the contact reinstalled): they name the old
    /// contact and the whole new fingerprint, after comparing the safety number computed
    /// with the new key (`trust show NEW`). The new key must have connected once (so its
    /// card is known). Queued messages move to it; the old key is marked replaced and its
    /// session ends. `safetyNumber`, when given, is what the person read from the other
    /// device: nothing changes unless it is the one computed with the new key.
    func replaceKey(
        of old: PeerRecord, newFingerprint given: String, safetyNumber typed: String?
    ) throws(NodeError) -> (PeerRecord, Int) {
        let whole: String
        switch FingerprintConfirmation.read(given) {
        case .whole(let g): whole = g
        case .mismatch: throw .fingerprintMismatch(expected: "?", given: given)
        case .tooShort(let needed): throw .fingerprintTooShort(given: given, needed: needed)
        }
        let all: [PeerRecord]
        do { all = try directory.peers() } catch { throw .storage(error) }
        let found = all.first { FingerprintConfirmation.names(whole, $0.identity) }
        // The old key as stored now (the caller's record may predate a replacement).
        let current = all.first { $0.identity == old.identity } ?? old
        let key = { (r: PeerRecord) in KeyReplacementCheck.Key(identity: r.identity, replacedBy: r.replacedBy) }
        if let refusal = KeyReplacementCheck.check(
            old: key(current), new: found.map(key), typedSafetyNumber: typed,
            expectedSafetyNumber: found.map { SafetyNumber.compute(me, $0.identity) } ?? "")
        {
            throw Self.error(refusal, old: old, given: given, new: found)
        }
        guard let new = found else { throw .newKeyNotFound(given) }
        let moved: Int
        do {
            moved = try store.replacePeer(old: old.identity, new: new.identity, at: nowMs)
            if let nickname = old.nickname, new.nickname == nil {
                try store.setNickname(identity: new.identity, nickname)
            }
        } catch {
            // The replacement may have committed before the nickname failed: the records
            // and the queue are read again, or a name resolved before would still send to
            // the retired key.
            directory.invalidate()
            host?.outboxChanged()
            throw .storage(error)
        }
        directory.invalidate()
        host?.outboxChanged()  // messages moved to another recipient: count and query again
        log.warning(
            "a person replaced a contact's key",
            ["name": old.label, "old": Self.printed(old.identity), "new": Self.printed(new.identity)])
        host?.closeSession(of: old.identity, reason: .notTrusted, text: "key was replaced")
        host?.keyReplaced(old: old.identity, new: new.identity)
        var applied = new
        applied.replacedBy = nil
        applied.trust = .verified
        applied.nickname = new.nickname ?? old.nickname
        return (readBack(applied), moved)
    }

    /// Accepts a key held under the `hold` policy: it is pinned, and dialled at once.
    func accept(_ peer: PeerRecord) throws(NodeError) -> PeerRecord {
        guard peer.trust == .pending else {
            throw .notApplicable("\(peer.label) is not awaiting approval (it is \(peer.trust.rawValue))")
        }
        let updated = try setTrust(peer, .pinned)
        do {
            if let addresses = try store.rememberedAddresses()[peer.identity] {
                host?.rememberAddresses(of: peer.identity, addresses)
            }
        } catch {
            // Accepted all the same: the addresses it is reached at next are dialled.
            log.warning(
                "accepted key's remembered addresses not read; it is dialled where it is seen next",
                ["peer": peer.label, "error": "\(error)"])
        }
        host?.redialNow(peer.identity)
        return updated
    }

    /// Blocks a peer: its session ends, and it gets none until unblocked.
    func block(_ peer: PeerRecord) throws(NodeError) -> PeerRecord {
        let updated = try setTrust(peer, .blocked)
        host?.closeSession(of: peer.identity, reason: .notTrusted, text: "blocked")
        host?.stopDialingRemembered(peer.identity)
        log.info("peer blocked by a person", ["peer": peer.label, "fingerprint": Self.printed(peer.identity)])
        return updated
    }

    /// Unblocks a peer (back to pinned: a person verifies again if they want).
    func unblock(_ peer: PeerRecord) throws(NodeError) -> PeerRecord {
        guard peer.trust == .blocked else {
            throw .notApplicable("\(peer.label) is not blocked (it is \(peer.trust.rawValue))")
        }
        let updated = try setTrust(peer, .pinned)
        host?.redialNow(peer.identity)
        return updated
    }

    /// Forgets a peer's pin (its history stays): the next contact with that key is a first
    /// one. Returns the keys it had replaced, which stay refused as blocked (the store's
    /// `forgetPeer`), so the person is told.
    @discardableResult
    func forget(_ peer: PeerRecord) throws(NodeError) -> [PeerRecord] {
        let blocked: [IdentityPublicKey]
        do { blocked = try store.forgetPeer(identity: peer.identity) } catch { throw .storage(error) }
        directory.invalidate()
        host?.closeSession(of: peer.identity, reason: .normal, text: "forgotten")
        host?.stopDialingRemembered(peer.identity)
        for key in blocked {
            host?.closeSession(of: key, reason: .notTrusted, text: "blocked")
            host?.stopDialingRemembered(key)
        }
        return blocked.compactMap { try? store.peer(identity: $0) }
    }

    /// The person's own name for a peer (nil removes it). One that looks like another live
    /// peer's name, or ours, is refused (`NicknameCheck`): it would make that name find this key.
    func setNickname(_ peer: PeerRecord, _ nickname: String?) throws(NodeError) -> PeerRecord {
        let live: [PeerRecord]
        do { live = try directory.peers().filter { $0.replacedBy == nil } } catch { throw .storage(error) }
        let entries = live.map {
            NameClashes.Entry(identity: $0.identity, selfAssertedName: $0.displayName, nickname: $0.nickname)
        }
        switch NicknameCheck.check(nickname, for: peer.identity, among: entries, myName: directory.myName) {
        case nil: break
        case .looksLikeMe:
            throw .notApplicable(
                "'\(nickname ?? "")' looks like this node's own name: a nickname must tell keys apart; "
                    + "choose another (nothing was changed)")
        case .looksLikeAnotherPeer(let others):
            let named = live.filter { others.contains($0.identity) }.map {
                "\($0.label) (\(Self.printed($0.identity)))"
            }
            throw .notApplicable(
                "'\(nickname ?? "")' looks like the name of another key, \(named.joined(separator: ", ")): a "
                    + "nickname must tell keys apart, or that name would find this key; choose another "
                    + "(nothing was changed)")
        }
        do { try store.setNickname(identity: peer.identity, nickname) } catch { throw .storage(error) }
        directory.invalidate()
        var applied = peer
        applied.nickname = nickname
        return readBack(applied)
    }

    /// Earlier keys of a contact, newest first.
    func previousKeys(of peer: PeerRecord) throws(NodeError) -> [PeerRecord] {
        do { return try store.previousKeys(of: peer.identity) } catch { throw .storage(error) }
    }

    // MARK: Helpers

    /// Writes `trust`; the record as stored after.
    private func setTrust(_ peer: PeerRecord, _ trust: TrustState) throws(NodeError) -> PeerRecord {
        do { try directory.setTrust(identity: peer.identity, trust) } catch { throw .storage(error) }
        var applied = peer
        applied.trust = trust
        return readBack(applied)
    }

    /// The record as stored after a change this driver committed. If it cannot be read,
    /// the record with the change applied (what the store holds now), and the failure
    /// logged: the change happened, so the answer must not say it failed (and what follows
    /// it, a blocked peer's session ending, must still happen).
    private func readBack(_ applied: PeerRecord) -> PeerRecord {
        do {
            return try store.peer(identity: applied.identity) ?? applied
        } catch {
            log.warning(
                "peer record not read back after a change; answered from the change",
                ["peer": applied.label, "error": "\(error)"])
            return applied
        }
    }

    /// Why a replacement was refused, in the words the person reads.
    private static func error(
        _ refusal: KeyReplacementCheck.Refusal, old: PeerRecord, given: String, new: PeerRecord?
    ) -> NodeError {
        switch refusal {
        case .newKeyNotFound: .newKeyNotFound(given)
        case .sameKey: .notApplicable("\(given) is already \(old.label)'s key: nothing to replace")
        case .newKeyReplaced(let by):
            .notApplicable("\(given) was itself replaced by \(printed(by)): it cannot stand for \(old.label)")
        case .oldKeyReplaced(let by): .peerReplaced(old, by: by)
        case .safetyNumberMismatch:
            .safetyNumberMismatch(label: old.label, newFingerprint: new.map { printed($0.identity) } ?? given)
        }
    }

    /// A key's fingerprint as people read it.
    static func printed(_ key: IdentityPublicKey) -> String { Fingerprint(key).description }
}
