import ParleyCore

/// What the trust driver reads and writes beside the cached peer records (`PeerDirectory`
/// writes those): a fresh read of one peer, the person's changes (nickname, a replaced key,
/// a forgotten pin), the key history, and the addresses a peer was reached at. Keys are
/// `IdentityPublicKey`; a test can stand between the driver and the store.
public protocol TrustStore: AnyObject {
    func peer(identity: IdentityPublicKey) throws(StoreError) -> PeerRecord?
    func setNickname(identity: IdentityPublicKey, _ nickname: String?) throws(StoreError)
    /// The old key replaced, its queue moved to the new one (one transaction); how many
    /// messages moved.
    @discardableResult
    func replacePeer(old: IdentityPublicKey, new: IdentityPublicKey, at: Int64) throws(StoreError) -> Int
    func previousKeys(of identity: IdentityPublicKey) throws(StoreError) -> [PeerRecord]
    @discardableResult func forgetPeer(identity: IdentityPublicKey) throws(StoreError) -> [IdentityPublicKey]
    /// Addresses each pinned, unblocked, current peer was reached at, newest first.
    func rememberedAddresses() throws(StoreError) -> [IdentityPublicKey: [String]]
}

extension Store: TrustStore {}
