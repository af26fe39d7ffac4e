import CSodium

/// Private presence (issue 15, docs/PROTOCOL.md "Discovery"): what a node's mDNS
/// advertisement carries instead of its fingerprint and name. A token only a node that
/// already knows the advertiser's identity key (a contact) can recognise, and that
/// changes every epoch (an hour) and with every fresh nonce, so a bystander cannot tell
/// two advertisements of the same node apart, nor follow a laptop across networks.
///
///     key   = SHA-256("parley presence v1" || identityKey || networkKey?)
///     token = HMAC-SHA256(key, epoch: u64be || nonce)[0..<12]
///
/// With a network key the token also needs the key: someone who learnt the identity key
/// elsewhere but is not on the network cannot recognise the node either.
public enum PresenceToken {
    public static let nonceLength = 8
    public static let tokenLength = 12
    /// Tokens rotate every epoch; receivers accept the epochs either side (clock skew).
    public static let epochSeconds: UInt64 = 3600

    public static func epoch(atUnixSeconds seconds: UInt64) -> UInt64 { seconds / epochSeconds }

    public static func make(identity: IdentityPublicKey, networkKey: [UInt8]?, epoch: UInt64, nonce: [UInt8]) -> [UInt8]
    {
        Sodium.ensureInitialized()
        var key = Sodium.sha256(Array("parley presence v1".utf8), identity.bytes, networkKey ?? [])
        defer { Sodium.wipe(&key) }
        var message: [UInt8] = []
        message.appendUInt64(epoch)
        message += nonce
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        _ = mac.withUnsafeMutableBufferPointer { out in
            message.withUnsafeBufferPointer { m in
                key.withUnsafeBufferPointer { k in
                    crypto_auth_hmacsha256(out.baseAddress!, m.baseAddress, UInt64(m.count), k.baseAddress!)
                }
            }
        }
        return Array(mac.prefix(tokenLength))
    }

    /// Whether `token` (with its `nonce`) was made by `identity` in an epoch next to `epoch`.
    public static func matches(
        _ token: [UInt8], nonce: [UInt8], identity: IdentityPublicKey, networkKey: [UInt8]?,
        epoch: UInt64
    ) -> Bool {
        guard token.count == tokenLength, nonce.count == nonceLength else { return false }
        for e in [epoch, epoch &+ 1, epoch &- 1]
        where Sodium.constantTimeEqual(
            make(identity: identity, networkKey: networkKey, epoch: e, nonce: nonce), token)
        {
            return true
        }
        return false
    }
}
