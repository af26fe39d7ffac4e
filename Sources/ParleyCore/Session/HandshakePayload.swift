/// What each side sends inside the encrypted payload of its XX handshake message
/// (message 2 for the responder, message 3 for the initiator).
///
/// Encoding: a sequence of fields `type: u8 | length: u16 big-endian | value`.
/// Field 0x01 (card) and 0x02 (boot id) are required; unknown types are skipped so
/// later versions can add fields; a repeated field is an error.
public struct HandshakePayload: Equatable, Sendable {
    public static let bootIDLength = 16

    public enum FieldType: UInt8 { case card = 0x01, bootID = 0x02, features = 0x10 }

    /// The sender's encoded, signed card.
    public var card: [UInt8]
    /// Random per daemon start: lets the peer tell a restart (new boot id: the old
    /// session is stale) from a simultaneous dial (same boot id: tie-break).
    public var bootID: [UInt8]
    /// Optional records the sender understands (field 0x10, omitted when empty: a node
    /// without the field is read as announcing none).
    public var features: ProtocolFeatures

    public init(card: [UInt8], bootID: [UInt8], features: ProtocolFeatures = []) {
        self.card = card
        self.bootID = bootID
        self.features = features
    }

    public func encoded() -> [UInt8] {
        var out = [UInt8]()
        out.append(FieldType.card.rawValue)
        out.appendUInt16(UInt16(card.count))
        out.append(contentsOf: card)
        out.append(FieldType.bootID.rawValue)
        out.appendUInt16(UInt16(bootID.count))
        out.append(contentsOf: bootID)
        if !features.isEmpty {
            out.append(FieldType.features.rawValue)
            out.appendUInt16(4)
            out.appendUInt32(features.rawValue)
        }
        return out
    }

    public static func decode(_ bytes: [UInt8]) throws(SessionHandshakeError) -> HandshakePayload {
        guard bytes.count <= WireLimits.maxHandshakePayloadBytes else {
            throw .malformedPayload("payload of \(bytes.count) bytes exceeds \(WireLimits.maxHandshakePayloadBytes)")
        }
        var r = ByteReader(bytes)
        var card: [UInt8]?
        var boot: [UInt8]?
        var features: ProtocolFeatures?
        do {
            while !r.isAtEnd {
                let type = try r.readUInt8()
                let len = Int(try r.readUInt16())
                let value = try r.readBytes(len)
                switch FieldType(rawValue: type) {
                case .card:
                    guard card == nil else { throw SessionHandshakeError.malformedPayload("card field repeated") }
                    card = value
                case .bootID:
                    guard boot == nil else { throw SessionHandshakeError.malformedPayload("boot id field repeated") }
                    guard value.count == bootIDLength else {
                        throw SessionHandshakeError.malformedPayload("boot id must be \(bootIDLength) bytes")
                    }
                    boot = value
                case .features:
                    guard features == nil else {
                        throw SessionHandshakeError.malformedPayload("features field repeated")
                    }
                    guard value.count == 4 else {
                        throw SessionHandshakeError.malformedPayload("features must be 4 bytes")
                    }
                    var fr = ByteReader(value)
                    features = ProtocolFeatures(rawValue: try fr.readUInt32())
                case nil:
                    continue
                }
            }
        } catch let e as SessionHandshakeError {
            throw e
        } catch {
            throw .malformedPayload("truncated field")
        }
        guard let card else { throw .malformedPayload("no card") }
        guard let boot else { throw .malformedPayload("no boot id") }
        return HandshakePayload(card: card, bootID: boot, features: features ?? [])
    }
}
