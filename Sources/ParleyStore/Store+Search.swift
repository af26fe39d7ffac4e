import GRDB

/// One message found by `search`, with an excerpt around the match.
public struct SearchHit: Sendable, Equatable {
    public var message: StoredMessage
    public var snippet: String
}

extension Store {
    /// Messages whose body contains every term of `query` (accents and case ignored, each
    /// term a prefix, CJK by characters: `SearchText`), best match first (FTS5's bm25; the
    /// newer message first among equals), at most `limit`, in `scope`. A query with no
    /// searchable term finds nothing.
    public func search(_ query: String, scope: HistoryScope, limit: Int) throws(StoreError) -> [SearchHit] {
        let (scoped, scopeArguments) = try Self.historyCondition(scope, table: "message")
        let limit = InputValidation.pageSize(limit)
        guard limit > 0, let match = SearchText.matchExpression(query) else { return [] }
        let messages = try read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT \(Self.messageColumns) FROM message_search
                    JOIN message ON message.row_id = message_search.rowid
                    WHERE message_search MATCH ?\(scoped)
                    ORDER BY message_search.rank, message.row_id DESC LIMIT ?
                    """)
            return try Self.fetchMessages(statement, StatementArguments([match] + scopeArguments + [limit]))
        }
        return messages.map { SearchHit(message: $0, snippet: SearchText.snippet($0.body, query: query)) }
    }
}
