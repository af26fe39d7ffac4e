/// "I already know these identities", blinded (record type `0x22`): the receiver learns
/// only which of *its own* contacts the sender also holds, never the rest of the sender's
/// list. A tag is `SHA-256("parley contact tag v1" || salt || identityKey)[0 ..< 16]`; the
/// salt is fresh per record, so tags from two sessions cannot be linked.
///
/// Encoding: `salt[16] || count: u16be || tag[16] × count`.
public struct ContactTags: Equatable, Sendable {
    public static let saltLength = 16
    public static let tagLength = 16
    static let domain = Array("parley contact tag v1".utf8)

    public let salt: [UInt8]
    public let tags: Set<[UInt8]>

    public init(salt: [UInt8], identities: [IdentityPublicKey]) {
        precondition(salt.count == Self.saltLength)
        self.salt = salt
        self.tags = Set(identities.prefix(WireLimits.maxContactTags).map { Self.tag(salt: salt, $0) })
    }

    public static func tag(salt: [UInt8], _ identity: IdentityPublicKey) -> [UInt8] {
        Array(Sodium.sha256(domain, salt, identity.bytes).prefix(tagLength))
    }

    /// Whether the sender holds `identity` (compares against the tags it sent).
    public func contains(_ identity: IdentityPublicKey) -> Bool { tags.contains(Self.tag(salt: salt, identity)) }

    public func encoded() -> [UInt8] {
        var out = salt
        out.appendUInt16(UInt16(truncatingIfNeeded: tags.count))
        for t in tags.sorted(by: { $0.lexicographicallyPrecedes($1) }) { out.append(contentsOf: t) }
        return out
    }

    public static func decode(_ bytes: [UInt8]) throws(AddressRecordError) -> ContactTags {
        var r = ByteReader(bytes)
        do {
            let salt = try r.readBytes(saltLength)
            let count = Int(try r.readUInt16())
            guard count <= WireLimits.maxContactTags else { throw AddressRecordError.endpointCount(count) }
            guard r.remaining == count * tagLength else { throw AddressRecordError.trailingBytes }
            var tags = Set<[UInt8]>()
            for _ in 0..<count { tags.insert(try r.readBytes(tagLength)) }
            return ContactTags(salt: salt, tags: tags)
        } catch let e as AddressRecordError {
            throw e
        } catch {
            throw .truncated
        }
    }

    private init(salt: [UInt8], tags: Set<[UInt8]>) {
        self.salt = salt
        self.tags = tags
    }
}
