/// Where a node says it can be reached, signed by that node's identity key (record type
/// `0x21`, docs/PROTOCOL.md "Address gossip"). Because the signature is the subject's own,
/// whoever relays the record (a gossiping contact) cannot change the addresses: a relay can
/// only pass the record on or drop it.
///
/// Encoding: `version: u8 (1) || identity[32] || issuedAt: u64be (Unix ms) || count: u8 ||
/// (family: u8 (4 | 6) || address[4 | 16] || port: u16be) × count || signature[64]`, the
/// signature over `"parley address record v1" || every preceding byte`.
public struct SignedAddressRecord: Equatable, Sendable {
    public static let version: UInt8 = 1
    static let signatureDomain = Array("parley address record v1".utf8)
    public static let signatureLength = 64

    /// One socket address: an IPv4 or IPv6 address in network byte order and a TCP port.
    public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
        /// 4 bytes (IPv4) or 16 bytes (IPv6).
        public let address: [UInt8]
        public let port: UInt16

        public init?(address: [UInt8], port: UInt16) {
            guard address.count == 4 || address.count == 16, port != 0 else { return nil }
            self.address = address
            self.port = port
        }

        /// An IPv4 dotted quad or IPv6 literal with a port; nil for names and anything else.
        public init?(host: String, port: UInt16) {
            guard let bytes = IPAddressText.parse(host) else { return nil }
            self.init(address: bytes, port: port)
        }

        public var host: String { IPAddressText.format(address) }
        public var description: String { address.count == 4 ? "\(host):\(port)" : "[\(host)]:\(port)" }

        /// Addresses no node listens at for others: unspecified, multicast, broadcast.
        /// Refused in a record (a signer could otherwise point dials at a whole segment).
        public var isDialable: Bool {
            if address.count == 4 {
                if address == [0, 0, 0, 0] || address == [255, 255, 255, 255] { return false }
                return address[0] & 0xF0 != 0xE0  // 224.0.0.0/4
            }
            if address.allSatisfy({ $0 == 0 }) { return false }
            return address[0] != 0xFF  // ff00::/8
        }
    }

    public let identity: IdentityPublicKey
    /// When the subject signed it, Unix milliseconds (its wall clock).
    public let issuedAt: UInt64
    public let endpoints: [Endpoint]
    public let signature: [UInt8]

    /// Signs a record for `identity` (our own addresses).
    public init(signing endpoints: [Endpoint], issuedAt: UInt64, with key: IdentityKeyPair) throws(AddressRecordError) {
        guard (1...WireLimits.maxAddressesPerRecord).contains(endpoints.count) else {
            throw .endpointCount(endpoints.count)
        }
        self.identity = key.publicKey
        self.issuedAt = issuedAt
        self.endpoints = endpoints
        self.signature = key.sign(Self.signatureDomain + Self.body(key.publicKey, issuedAt, endpoints))
    }

    static func body(_ identity: IdentityPublicKey, _ issuedAt: UInt64, _ endpoints: [Endpoint]) -> [UInt8] {
        var out: [UInt8] = [version]
        out.append(contentsOf: identity.bytes)
        out.appendUInt64(issuedAt)
        out.append(UInt8(truncatingIfNeeded: endpoints.count))
        for e in endpoints {
            out.append(e.address.count == 4 ? 4 : 6)
            out.append(contentsOf: e.address)
            out.appendUInt16(e.port)
        }
        return out
    }

    public func encoded() -> [UInt8] { Self.body(identity, issuedAt, endpoints) + signature }

    /// Decodes and verifies the signature: a record that returns is the subject's own word.
    /// Freshness is the receiver's decision (`AddressGossip`), it needs a clock.
    public static func decode(_ bytes: [UInt8]) throws(AddressRecordError) -> SignedAddressRecord {
        guard bytes.count <= WireLimits.maxAddressRecordBytes else { throw .tooLarge(bytes.count) }
        var r = ByteReader(bytes)
        do {
            let v = try r.readUInt8()
            guard v == version else { throw AddressRecordError.unsupportedVersion(v) }
            let identity = try IdentityPublicKey(bytes: try r.readBytes(IdentityPublicKey.length))
            let issuedAt = try r.readUInt64()
            let count = Int(try r.readUInt8())
            guard (1...WireLimits.maxAddressesPerRecord).contains(count) else {
                throw AddressRecordError.endpointCount(count)
            }
            var endpoints: [Endpoint] = []
            for _ in 0..<count {
                let family = try r.readUInt8()
                guard family == 4 || family == 6 else { throw AddressRecordError.badEndpoint("family \(family)") }
                let address = try r.readBytes(family == 4 ? 4 : 16)
                let port = try r.readUInt16()
                guard let e = Endpoint(address: address, port: port), e.isDialable else {
                    throw AddressRecordError.badEndpoint(
                        "\(IPAddressText.format(address)) port \(port) is not a unicast listening address")
                }
                guard !endpoints.contains(e) else { throw AddressRecordError.badEndpoint("duplicate \(e)") }
                endpoints.append(e)
            }
            let signed = bytes.count - r.remaining
            let signature = try r.readBytes(signatureLength)
            guard r.isAtEnd else { throw AddressRecordError.trailingBytes }
            guard identity.verify(signature: signature, message: signatureDomain + Array(bytes[0..<signed])) else {
                throw AddressRecordError.badSignature
            }
            return SignedAddressRecord(
                identity: identity, issuedAt: issuedAt, endpoints: endpoints, signature: signature)
        } catch let e as AddressRecordError {
            throw e
        } catch {
            throw .truncated
        }
    }

    private init(identity: IdentityPublicKey, issuedAt: UInt64, endpoints: [Endpoint], signature: [UInt8]) {
        self.identity = identity
        self.issuedAt = issuedAt
        self.endpoints = endpoints
        self.signature = signature
    }
}

public enum AddressRecordError: Error, Equatable, Sendable, CustomStringConvertible {
    case tooLarge(Int)
    case truncated
    case trailingBytes
    case unsupportedVersion(UInt8)
    case endpointCount(Int)
    case badEndpoint(String)
    /// Not signed by the identity it names: a relay tried to redirect someone.
    case badSignature

    public var description: String {
        switch self {
        case .tooLarge(let n): return "address record of \(n) bytes exceeds \(WireLimits.maxAddressRecordBytes)"
        case .truncated: return "address record is truncated"
        case .trailingBytes: return "address record has trailing bytes"
        case .unsupportedVersion(let v): return "address record version \(v) is not supported"
        case .endpointCount(let n):
            return "address record lists \(n) addresses (1 to \(WireLimits.maxAddressesPerRecord))"
        case .badEndpoint(let why): return "address record: \(why)"
        case .badSignature: return "address record is not signed by the identity it names"
        }
    }
}
