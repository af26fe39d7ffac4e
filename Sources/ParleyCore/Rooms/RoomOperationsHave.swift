/// The heads of a room's operation graph as the sender holds it (record `roomOpsHave`,
/// 0x19, features bit 5; docs/PROTOCOL.md "Operation summaries"): with it, a member that
/// holds operations outside the past of these heads sends them, so operations need not go
/// from every member to every member (issue 30, "Rooms as big as an office").
///
/// `room[16] || headCount: u8 (0 ... 64) || head[32] × headCount, strictly ascending`
public struct RoomOperationsHave: Equatable, Sendable {
    /// Heads listed at most. A room holds at most 256 operations and, in practice, a
    /// handful of heads; past 64 the lowest are listed: the other side then sends some
    /// operations the sender holds (it de-duplicates them), never the reverse.
    public static let maxHeads = 64
    public static let maxEncodedLength = RoomID.length + 1 + maxHeads * RoomOperationHash.length

    public let roomID: RoomID
    /// Strictly ascending by bytes, at most `maxHeads`.
    public let heads: [RoomOperationHash]

    /// Sorts `heads`, drops duplicates and keeps the lowest `maxHeads`.
    public init(roomID: RoomID, heads: [RoomOperationHash]) {
        self.roomID = roomID
        self.heads = Array(Set(heads).sorted().prefix(Self.maxHeads))
    }

    public func encoded() -> [UInt8] {
        var b = roomID.bytes
        b.append(UInt8(heads.count))
        for h in heads { b += h.bytes }
        return b
    }

    public static func decode(_ bytes: [UInt8]) throws(AppRecordError) -> RoomOperationsHave {
        let type = AppRecord.RecordType.roomOpsHave.rawValue
        guard bytes.count >= RoomID.length + 1 else { throw .malformed(type: type, reason: "too short") }
        let count = Int(bytes[RoomID.length])
        guard count <= maxHeads else { throw .malformed(type: type, reason: "\(count) heads exceed \(maxHeads)") }
        guard bytes.count == RoomID.length + 1 + count * RoomOperationHash.length else {
            throw .malformed(type: type, reason: "length does not match \(count) heads")
        }
        var heads: [RoomOperationHash] = []
        var at = RoomID.length + 1
        for _ in 0..<count {
            let h = RoomOperationHash(exactly: Array(bytes[at..<at + RoomOperationHash.length]))
            if let last = heads.last, !(last < h) {
                throw .malformed(type: type, reason: "heads must be strictly ascending")
            }
            heads.append(h)
            at += RoomOperationHash.length
        }
        return RoomOperationsHave(roomID: RoomID(exactly: Array(bytes[0..<RoomID.length])), heads: heads)
    }
}
