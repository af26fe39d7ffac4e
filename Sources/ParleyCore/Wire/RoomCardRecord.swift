/// A member's signed card passed on with a room's operations (record `0x18`, features bit
/// 4, docs/PROTOCOL.md "Room cards"): so a member that never had a session with another
/// sees its name, and can write to it, instead of a bare fingerprint (issue 30).
///
/// Layout: `room[16] || card` (the card exactly as in the handshake, "Cards"). The record
/// only carries the bytes: the card's signature is checked by the receiver, which refuses
/// a card that does not verify without closing the session (a member may pass on a
/// damaged copy), like a signed room message.
public struct RoomCardRecord: Equatable, Sendable {
    public static let minPayloadLength = RoomID.length + Card.minEncodedLength
    public static let maxPayloadLength = RoomID.length + Card.maxEncodedLength

    /// The room through which the card is passed on: its subject must be a joined member of
    /// it (in the receiver's view), and so must the receiver and the member that sent it.
    public var roomID: RoomID
    /// The encoded card, not yet verified.
    public var card: [UInt8]

    public init(roomID: RoomID, card: [UInt8]) {
        self.roomID = roomID
        self.card = card
    }

    public func encoded() -> [UInt8] { roomID.bytes + card }

    public static func decode(_ payload: [UInt8]) throws(AppRecordError) -> RoomCardRecord {
        guard (minPayloadLength...maxPayloadLength).contains(payload.count) else {
            throw .malformed(
                type: AppRecord.RecordType.roomCard.rawValue,
                reason: "\(payload.count) bytes; a room card is \(minPayloadLength) to \(maxPayloadLength)")
        }
        return RoomCardRecord(
            roomID: RoomID(exactly: Array(payload[0..<RoomID.length])), card: Array(payload[RoomID.length...]))
    }
}
