import Foundation
import GRDB
import ParleyCore

/// Which part of the message log a history page is taken from.
public enum HistoryScope: Sendable, Hashable {
    /// Every message, direct and room.
    case everything
    /// The direct conversation with this peer; room messages are not in it.
    case peer(IdentityPublicKey)
    /// One room's messages.
    case room(RoomID)
}

/// One page of history, ascending by `rowID`, and whether the log has more on either side
/// (in the same scope), so a client can offer "older" and "newer" without guessing from
/// the page size.
public struct HistoryPage: Sendable, Equatable {
    public var messages: [StoredMessage]
    /// A message older than the first one of the page exists.
    public var hasOlder: Bool
    /// A message newer than the last one of the page exists.
    public var hasNewer: Bool
    /// Rows of the page's range that could not be read (damaged): left out of `messages`;
    /// `hasOlder` and `hasNewer` count from the page's whole range, these included, so
    /// paging goes on past them.
    public var unreadable: [UnreadableRow]

    public init(messages: [StoredMessage], hasOlder: Bool, hasNewer: Bool, unreadable: [UnreadableRow] = []) {
        self.messages = messages
        self.hasOlder = hasOlder
        self.hasNewer = hasNewer
        self.unreadable = unreadable
    }
}

extension Store {
    /// A page of history, newest first by default: people open a conversation to see what
    /// was said last, so without `after` the page is the NEWEST `limit` messages strictly
    /// before `before` (before the end of the log without it). With `after` (and no
    /// `before`) it is the OLDEST `limit` messages strictly after `after`: paging forward
    /// from a cursor. Either way the page is returned ascending. `limit` is clamped to
    /// `StoreLimits.maximumPageSize`. A row that does not decode is left out and named in
    /// `unreadable` (one damaged message must not hide the rest of the conversation).
    public func historyPage(_ scope: HistoryScope, after: Int64?, before: Int64?, limit: Int)
        throws(StoreError) -> HistoryPage
    {
        let (condition, scopeArguments) = try Self.historyCondition(scope)
        let limit = InputValidation.pageSize(limit)
        guard limit > 0 else { return HistoryPage(messages: [], hasOlder: false, hasNewer: false) }
        let forward = after != nil && before == nil
        return try read { db in
            let range = "row_id > ? AND row_id < ?\(condition)"
            let sql =
                forward
                ? "SELECT \(Self.messageColumns) FROM message WHERE \(range) ORDER BY row_id LIMIT ?"
                : """
                SELECT * FROM (SELECT \(Self.messageColumns) FROM message WHERE \(range)
                ORDER BY row_id DESC LIMIT ?) ORDER BY row_id
                """
            let arguments: [any DatabaseValueConvertible] =
                [after ?? Int64.min, before ?? Int64.max] + scopeArguments + [limit]
            let decoded = try self.fetchMessageRows(try db.cachedStatement(sql: sql), StatementArguments(arguments))
            let (rows, unreadable) = (decoded.records, decoded.unreadable)
            // The page's range, unreadable rows included, so the probes below look beyond them.
            let rowIDs = rows.map(\.rowID) + unreadable.map(\.rowID)
            // Whether more exists on each side: one indexed probe each (message_peer for a
            // peer, the room index for a room, the primary key otherwise).
            let exists = try db.cachedStatement(
                sql: "SELECT EXISTS (SELECT 1 FROM message WHERE row_id > ? AND row_id < ?\(condition))")
            func any(_ lower: Int64, _ upper: Int64) throws -> Bool {
                return try Bool.fetchOne(exists, arguments: StatementArguments([lower, upper] + scopeArguments))
                    ?? false
            }
            let older: Bool
            let newer: Bool
            if let first = rowIDs.min(), let last = rowIDs.max() {
                older = try any(Int64.min, first)
                newer = try any(last, Int64.max)
            } else {
                // An empty page: more exists only beyond the bounds that were asked for.
                older = try after.map { try any(Int64.min, $0 &+ 1) } ?? false
                newer = try before.map { try any($0 &- 1, Int64.max) } ?? false
            }
            return HistoryPage(messages: rows, hasOlder: older, hasNewer: newer, unreadable: unreadable)
        }
    }

    /// The SQL that restricts `message` to `scope`, and its arguments. `table`: how the
    /// query names the message table, when it must be explicit (a join).
    static func historyCondition(_ scope: HistoryScope, table: String? = nil)
        throws(StoreError) -> (String, [any DatabaseValueConvertible])
    {
        let t = table.map { $0 + "." } ?? ""
        switch scope {
        case .everything:
            return ("", [])
        case .peer(let identity):
            return (" AND \(t)peer = \(partyOfKeyParameter) AND \(t)room IS NULL", [keyBlob(identity)])
        case .room(let room):
            return (" AND \(t)room = \(partyOfKeyParameter)", [keyBlob(room)])
        }
    }
}
