import ParleyCore

/// Where contacts can be reached, and their signed address records (docs/PROTOCOL.md
/// "Address gossip"): the seam `GossipDriver` depends on, one small protocol per concern
/// as libsignal's storage traits are. Identities are typed; the store keeps hex.
public protocol AddressBookStore: AnyObject {
    func rememberAddress(_ address: String, of identity: IdentityPublicKey, at: Int64) throws(StoreError)
    /// Every remembered address by peer, newest first, for peers neither blocked nor replaced.
    func rememberedAddresses() throws(StoreError) -> [IdentityPublicKey: [String]]
    func saveAddressRecord(_ record: [UInt8], of identity: IdentityPublicKey, issuedAt: Int64) throws(StoreError)
    func addressRecords() throws(StoreError) -> [[UInt8]]
    /// Whether the local user has written to `peer`: address gossip's test of a contact.
    func hasSentMessages(to peer: IdentityPublicKey) throws(StoreError) -> Bool
}

extension Store: AddressBookStore {}
