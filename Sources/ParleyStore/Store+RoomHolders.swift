import GRDB
import ParleyCore

/// What one acknowledgement or summary changed in the room outbox (issue 30, "delivery
/// state that says the truth"): room messages now held by every member they were sent to
/// (`delivered`), and those that some member newly holds while others still lack them.
public struct RoomDeliveryChange: Sendable, Equatable {
    /// Now held by every member: the row turned `delivered`.
    public var delivered: [StoredMessage] = []
    /// A member newly holds it, not every member yet.
    public var held: [StoredMessage] = []

    public init(delivered: [StoredMessage] = [], held: [StoredMessage] = []) {
        self.delivered = delivered
        self.held = held
    }

    public var isEmpty: Bool { delivered.isEmpty && held.isEmpty }
}

/// Who holds an outgoing room message, as far as this node knows.
public struct RoomMessageHolders: Sendable, Equatable {
    /// The members it was sent to (joined members, other than this node, when it was written).
    public var members: Int
    /// Those known to hold it (they acknowledged it, or their summary lists it), with when
    /// this node learned it, in that order.
    public var held: [(member: IdentityPublicKey, at: Int64)]

    public static func == (a: Self, b: Self) -> Bool {
        a.members == b.members && a.held.map(\.member) == b.held.map(\.member) && a.held.map(\.at) == b.held.map(\.at)
    }
}

extension Store {
    /// Holders of the outgoing room messages among `rows` (other rows are absent).
    public func roomHolders(ofRows rows: [Int64]) throws(StoreError) -> [Int64: RoomMessageHolders] {
        guard !rows.isEmpty else { return [:] }
        return try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT member, state, delivered_at FROM room_delivery WHERE message_row = ?
                    ORDER BY delivered_at, member
                    """)
            var result: [Int64: RoomMessageHolders] = [:]
            for row in Set(rows) {
                var members = 0
                var held: [(IdentityPublicKey, Int64)] = []
                let cursor = try Row.fetchCursor(statement, arguments: [row])
                while let r = try cursor.next() {
                    members += 1
                    if try r.decode(String.self, atIndex: 1) == "delivered" {
                        held.append(
                            (
                                try r.identityKey(0, column: "room_delivery.member"),
                                try r.decode(Int64?.self, atIndex: 2) ?? 0
                            ))
                    }
                }
                if members > 0 { result[row] = RoomMessageHolders(members: members, held: held) }
            }
            return result
        }
    }

    /// `member`'s summary of `room` says it holds `author`'s (this node's) signed messages
    /// with these room sequences: marks them held by it, like its acknowledgement would
    /// (they then stop being sent to it). Only messages queued for `member` change: a
    /// summary from anyone the message was not sent to changes nothing, and a member that
    /// claims what it lacks only keeps it from itself (other members' sync still offers it).
    public func markRoomMessagesHeld(
        room: RoomID, author: IdentityPublicKey, ranges: [ClosedRange<UInt64>], by member: IdentityPublicKey, at: Int64
    ) throws(StoreError) -> RoomDeliveryChange {
        guard !ranges.isEmpty else { return RoomDeliveryChange() }
        // Re-derivable bookkeeping, like an acknowledgement.
        return try relaxedWrite { db in
            let queued = try db.cachedStatement(
                sql: """
                    SELECT s.id FROM room_signed_message s
                    JOIN message m ON m.id = \(Schema.unhexFunction)(s.id)
                        AND m.sender = (SELECT id FROM party WHERE key = \(Schema.unhexFunction)(s.author))
                        AND m.room = (SELECT id FROM party WHERE key = \(Schema.unhexFunction)(s.room)) AND m.incoming = 0
                    JOIN room_delivery d ON d.message_row = m.row_id AND d.member = ? AND d.state = 'queued'
                    WHERE s.room = ? AND s.author = ? AND s.room_sequence BETWEEN ? AND ?
                    """)
            var ids: [MessageID] = []
            for r in ranges {
                let low = Int64(clamping: r.lowerBound)
                let high = Int64(clamping: r.upperBound)
                ids += try Row.fetchAll(queued, arguments: [member.hex, room.hex, author.hex, low, high]).map {
                    try $0.fixedLengthID(MessageID.self, 0, column: "room_signed_message.id")
                }
            }
            guard !ids.isEmpty else { return RoomDeliveryChange() }
            return try self.markRoomDeliveryChange(db, ids: ids, by: member, at: at)
        }
    }
}
