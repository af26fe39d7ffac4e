import ParleyCore

/// The peer directory's storage: pinned keys, their trust and names, their replacement
/// history. A concern-sized seam in the manner of libsignal's storage traits
/// (`IdentityKeyStore`, `SessionStore`: one small trait per kind of record, typed keys in
/// and out), so a driver that keeps peers (`PeerDirectory`) depends on what it reads and
/// writes, not on the whole `Store`, and a test can stand between them (count reads, fail
/// a write). Keys are `IdentityPublicKey`; the store keeps them as hex and converts inside.
/// Not on a per-message path: the directory caches what it reads.
public protocol PeerStore: AnyObject {
    func peer(identity: IdentityPublicKey) throws(StoreError) -> PeerRecord?
    /// Every known peer, replaced ones included, ordered by name then identity.
    func peers() throws(StoreError) -> [PeerRecord]
    func peers(named displayName: String) throws(StoreError) -> [PeerRecord]
    func peer(atAddress address: String) throws(StoreError) -> PeerRecord?
    func upsertPeer(_ record: PeerRecord) throws(StoreError)
    func setTrust(identity: IdentityPublicKey, _ trust: TrustState) throws(StoreError)
    func setNickname(identity: IdentityPublicKey, _ nickname: String?) throws(StoreError)
    @discardableResult
    func replacePeer(old: IdentityPublicKey, new: IdentityPublicKey, at: Int64) throws(StoreError) -> Int
    func previousKeys(of identity: IdentityPublicKey) throws(StoreError) -> [PeerRecord]
    @discardableResult func forgetPeer(identity: IdentityPublicKey) throws(StoreError) -> [IdentityPublicKey]
    func touchPeer(identity: IdentityPublicKey, at: Int64, address: String?) throws(StoreError)
    /// Replacements of `identity`'s key, or by it, oldest first (the key history
    /// `replacePeer` writes).
    func keyChanges(involving identity: IdentityPublicKey) throws(StoreError) -> [KeyChangeRecord]
    /// Forgets unused first-seen keys (Store+Expiry.swift); the identities forgotten.
    @discardableResult
    func expireUnusedPeers(lastSeenBefore: Int64, keep: Set<IdentityPublicKey>) throws(StoreError)
        -> [IdentityPublicKey]
    /// Whether any message was exchanged with `peer`: a correspondent outranks a stranger
    /// when the session table must evict one.
    func hasExchangedMessages(with peer: IdentityPublicKey) throws(StoreError) -> Bool
}

extension Store: PeerStore {
    public func hasExchangedMessages(with peer: IdentityPublicKey) throws(StoreError) -> Bool {
        try hasMessages(with: peer)
    }
}
