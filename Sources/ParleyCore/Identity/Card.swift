/// A signed statement by an identity key: "I am called `displayName`, usually reachable on
/// `hostName`, and my Noise static key is `noiseKey`". Peers exchange cards so that the
/// Noise key seen in a handshake can be tied to the identity (and fingerprint) a user trusts.
///
/// Every `Card` value is valid: the only ways to get one are `issue` (which signs) and
/// `decode` (which checks every field and the signature). Wire format: docs/PROTOCOL.md, "Cards".
public struct Card: Hashable, Sendable {
    /// The only format this build writes and reads.
    public static let currentVersion: UInt8 = 1
    /// Display names are for people; 64 bytes fits any reasonable name in any script
    /// (16+ CJK characters) and keeps cards small. The length prefix is one byte.
    public static let maxDisplayNameLength = 64
    /// The DNS limit for a host name in text form (RFC 1035 / RFC 1123).
    public static let maxHostNameLength = 253
    /// The DNS limit for one label.
    public static let maxHostLabelLength = 63
    /// Ed25519 signature length.
    public static let signatureLength = 64
    /// Prefix of the signed message: the signature over a card can never be replayed as
    /// a signature over any other Parley structure, nor a later card format.
    static let signatureDomain: [UInt8] = Array("parley-card-v1\0".utf8)

    /// Fixed-size fields: version, two keys, two length bytes, three u64s.
    static let fixedFieldsLength = 1 + IdentityPublicKey.length + NoisePublicKey.length + 1 + 1 + 3 * 8
    /// Largest possible encoding (472 bytes): bounds what a reader must buffer for a card.
    public static let maxEncodedLength = fixedFieldsLength + maxDisplayNameLength + maxHostNameLength + signatureLength
    /// Smallest possible encoding (156 bytes): one-byte name, empty host name.
    public static let minEncodedLength = fixedFieldsLength + 1 + signatureLength

    public let version: UInt8
    public let identityKey: IdentityPublicKey
    public let noiseKey: NoisePublicKey
    public let displayName: String
    public let hostName: String
    /// Unix seconds when the card was issued (informational; ordering uses `sequence`).
    public let issuedAt: UInt64
    /// Grows with every re-issue by the same identity: the higher one wins.
    public let sequence: UInt64
    /// Unix seconds after which the card must not be used; nil = never expires.
    public let expiresAt: UInt64?
    public let signature: [UInt8]

    private init(
        identityKey: IdentityPublicKey, noiseKey: NoisePublicKey, displayName: String,
        hostName: String, issuedAt: UInt64, sequence: UInt64, expiresAt: UInt64?, signature: [UInt8]
    ) {
        self.version = Self.currentVersion
        self.identityKey = identityKey
        self.noiseKey = noiseKey
        self.displayName = displayName
        self.hostName = hostName
        self.issuedAt = issuedAt
        self.sequence = sequence
        self.expiresAt = expiresAt
        self.signature = signature
    }

    /// Creates and signs a card. Throws if a field would make peers reject it.
    public static func issue(
        identity: IdentityKeyPair, noiseKey: NoisePublicKey, displayName: String,
        hostName: String, issuedAt: UInt64, sequence: UInt64,
        expiresAt: UInt64? = nil
    ) throws(CardError) -> Card {
        // A name typed in another normalization form is the same name: sign its NFC form.
        let name = try CardFieldRules.displayName(utf8: Array(CardFieldRules.nfc(displayName).utf8))
        let host = try CardFieldRules.hostName(bytes: Array(hostName.utf8))
        try CardFieldRules.checkExpiry(issuedAt: issuedAt, expiresAt: expiresAt)
        let unsigned = Card(
            identityKey: identity.publicKey, noiseKey: noiseKey, displayName: name,
            hostName: host, issuedAt: issuedAt, sequence: sequence,
            expiresAt: expiresAt, signature: [])
        let signature = identity.sign(signatureDomain + unsigned.signedBytes())
        return Card(
            identityKey: identity.publicKey, noiseKey: noiseKey, displayName: name,
            hostName: host, issuedAt: issuedAt, sequence: sequence,
            expiresAt: expiresAt, signature: signature)
    }

    /// Everything before the signature, in wire order.
    func signedBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(Self.maxEncodedLength)
        let name = Array(displayName.utf8)
        let host = Array(hostName.utf8)
        out.append(version)
        out += identityKey.bytes
        out += noiseKey.bytes
        // Both counts were bounded (64, 253) when the card was built: they fit a byte.
        out.append(UInt8(name.count))
        out += name
        out.append(UInt8(host.count))
        out += host
        Self.appendBigEndian(issuedAt, to: &out)
        Self.appendBigEndian(sequence, to: &out)
        Self.appendBigEndian(expiresAt ?? 0, to: &out)
        return out
    }

    /// The canonical wire form: the signed bytes followed by the 64-byte signature.
    public func encoded() -> [UInt8] { signedBytes() + signature }

    /// Parses and verifies a card. Accepts exactly one card: no more, no fewer bytes.
    public static func decode(_ bytes: [UInt8]) throws(CardError) -> Card {
        var r = Reader(bytes)
        let version = try r.byte("version")
        guard version == currentVersion else { throw .unsupportedVersion(version) }
        let identityBytes = try r.take(IdentityPublicKey.length, "identity key")
        let noiseBytes = try r.take(NoisePublicKey.length, "Noise key")
        // Force-try safe: `take` returned exactly each key's length, the only thing checked.
        let identityKey = try! IdentityPublicKey(bytes: identityBytes)
        let noiseKey = try! NoisePublicKey(bytes: noiseBytes)
        let nameLength = Int(try r.byte("display name length"))
        let name = try CardFieldRules.displayName(utf8: try r.take(nameLength, "display name"))
        let hostLength = Int(try r.byte("host name length"))
        let host = try CardFieldRules.hostName(bytes: try r.take(hostLength, "host name"))
        let issuedAt = try r.u64("issued-at")
        let sequence = try r.u64("sequence")
        let rawExpiry = try r.u64("expires-at")
        let expiresAt: UInt64? = rawExpiry == 0 ? nil : rawExpiry
        try CardFieldRules.checkExpiry(issuedAt: issuedAt, expiresAt: expiresAt)
        let signedEnd = r.offset
        let signature = try r.take(signatureLength, "signature")
        guard r.remaining == 0 else { throw .trailingBytes(count: r.remaining) }
        guard identityKey.verify(signature: signature, message: signatureDomain + bytes[..<signedEnd]) else {
            throw .badSignature
        }
        return Card(
            identityKey: identityKey, noiseKey: noiseKey, displayName: name, hostName: host,
            issuedAt: issuedAt, sequence: sequence, expiresAt: expiresAt, signature: signature)
    }

    /// True once `now` (unix seconds) has reached the expiry time.
    public func isExpired(now: UInt64) -> Bool {
        guard let expiresAt else { return false }
        return now >= expiresAt
    }

    /// True if this card replaces `other`: same identity, strictly higher sequence.
    public func supersedes(_ other: Card) -> Bool {
        identityKey == other.identityKey && sequence > other.sequence
    }

    /// The fingerprint of the identity key that signed this card.
    public var fingerprint: Fingerprint { Fingerprint(identityKey) }

    private static func appendBigEndian(_ v: UInt64, to out: inout [UInt8]) {
        for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    /// A bounds-checked cursor: every read names its field so a truncation error says where.
    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }
        var remaining: Int { bytes.count - offset }

        mutating func take(_ n: Int, _ field: String) throws(CardError) -> [UInt8] {
            guard remaining >= n else { throw .truncated(field: field) }
            defer { offset += n }
            return Array(bytes[offset..<(offset + n)])
        }
        mutating func byte(_ field: String) throws(CardError) -> UInt8 { try take(1, field)[0] }
        mutating func u64(_ field: String) throws(CardError) -> UInt64 {
            try take(8, field).reduce(UInt64(0)) { ($0 << 8) | UInt64($1) }
        }
    }
}
