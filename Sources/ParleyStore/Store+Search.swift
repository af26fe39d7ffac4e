import GRDB

/// One message found by `search`, with an excerpt around the match.
public struct SearchHit: Sendable, Equatable {
    public var message: StoredMessage
    public var snippet: String
}

/// What a search found: the hits, best first, and the matching rows that could not be
/// read (damaged, `UnreadableRow`), left out: one damaged message never fails a search.
public struct SearchResults: Sendable, Equatable {
    public var hits: [SearchHit]
    public var unreadable: [UnreadableRow]

    public init(hits: [SearchHit], unreadable: [UnreadableRow] = []) {
        self.hits = hits
        self.unreadable = unreadable
    }
}

extension Store {
    /// How many of the newest matches a search ranks. bm25 is computed per match and the
    /// hits are then sorted, so without a bound a common word costs the size of the history
    /// (32,000 matches of 1,000,000 messages took 128 ms, bench row 12d, goal ≤ 50 ms). FTS5
    /// walks its matches newest first (descending rowid) and stops here, so a search costs
    /// at most this many scores whatever the history's size. A person searching a chat looks
    /// for something recent far more often than for the best match of years; an older
    /// message is still found by a query that names more of its words (they must all match).
    public static let searchRankingWindow = 2_000

    /// Messages whose body contains every term of `query` (accents and case ignored, each
    /// term a prefix, CJK by characters: `SearchText`), best match first (FTS5's bm25; the
    /// newer message first among equals) among the newest `searchRankingWindow` matches, at
    /// most `limit`, in `scope`. A query with no searchable term finds nothing. A matching
    /// row that does not decode is left out and named (`SearchResults.unreadable`).
    public func search(_ query: String, scope: HistoryScope, limit: Int) throws(StoreError) -> SearchResults {
        let (scoped, scopeArguments) = try Self.historyCondition(scope, table: "message")
        let limit = InputValidation.pageSize(limit)
        guard limit > 0, let match = SearchText.matchExpression(query) else { return SearchResults(hits: []) }
        // Bodies stored since the last feed are indexed first: a search never misses one.
        try catchUpSearchIndex()
        let messages = try read { db in
            let statement = try db.cachedStatement(
                // The inner query walks the matches newest first (FTS5 gives rowids in
                // descending order without a sort) and reads `rank` (bm25) only for the rows
                // it returns; the scope, when there is one, is checked per match on the
                // message's primary key. The LIMIT keeps SQLite from flattening it into the
                // outer query, which ranks and sorts at most the window.
                sql: """
                    SELECT \(Self.messageColumns) FROM (
                        SELECT message_search.rowid AS hit, message_search.rank AS score FROM message_search
                        \(scoped.isEmpty ? "" : "JOIN message ON message.row_id = message_search.rowid")
                        WHERE message_search MATCH ?\(scoped)
                        ORDER BY message_search.rowid DESC LIMIT ?
                    ) AS newest
                    JOIN message ON message.row_id = newest.hit
                    ORDER BY newest.score, message.row_id DESC LIMIT ?
                    """)
            // The outer LIMIT asks for the damaged rows' places too, so `limit` good hits
            // are returned when the window holds them.
            return try self.fetchMessageRows(
                statement,
                StatementArguments(
                    [match] + scopeArguments
                        + [Self.searchRankingWindow, limit + Self.unreadableRowsSteppedOverPerRead]),
                keep: limit)
        }
        return SearchResults(
            hits: messages.records.map { SearchHit(message: $0, snippet: SearchText.snippet($0.body, query: query)) },
            unreadable: messages.unreadable)
    }
}
