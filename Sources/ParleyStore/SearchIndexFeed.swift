/// When the full-text index is fed, and with which rows.
///
/// Bodies are indexed in batches, not by a per-row trigger: FTS5 writes a new index segment
/// every time a statement that touches it opens a savepoint, so a trigger on every body
/// insert cost a segment (and its merging) per message, about 150,000 instructions each in
/// callgrind (docs/BENCHMARKS.md). Instead the store remembers the newest body row already
/// indexed (`Schema.Counter.searchIndexedThrough`, in the same transactions as the index
/// itself) and indexes every body row above it with ONE statement: one segment per feed.
///
/// `message.row_id` is AUTOINCREMENT (never reused), so "every body row above the mark" is
/// exactly "every body not yet indexed", whatever path stored it. A crash loses nothing: the
/// mark commits with the rows it covers, and opening the store feeds whatever is above it.
/// A search feeds first, so it never misses a stored message.
struct SearchIndexFeed: Equatable {
    /// Bodies the index may lag behind before a write transaction feeds it. Large enough
    /// that one message at a time costs one segment per this many messages; small enough
    /// that a search catching up first tokenises at most this many bodies (well under a
    /// millisecond each).
    static let maxBacklogRows: Int64 = 256

    /// Every body row up to this one is in the index.
    private(set) var indexedThrough: Int64

    /// Why a feed is asked for.
    enum Occasion: Equatable {
        /// The end of a write transaction: feed only if the backlog reached `maxBacklogRows`.
        case writeCommitting
        /// Before a search, at open, at close: feed whatever is behind.
        case catchUp
    }

    /// The body rows to index now (`indexedThrough + 1 ... newestBodyRow`), or nil. The mark
    /// moves on only through `fed(through:)`, once the rows are in the index.
    func rowsToIndex(newestBodyRow: Int64, occasion: Occasion) -> ClosedRange<Int64>? {
        guard newestBodyRow > indexedThrough else { return nil }
        if occasion == .writeCommitting && newestBodyRow - indexedThrough < Self.maxBacklogRows { return nil }
        return (indexedThrough + 1)...newestBodyRow
    }

    /// The rows up to `row` are in the index (same transaction as the mark's update).
    mutating func fed(through row: Int64) {
        indexedThrough = max(indexedThrough, row)
    }
}
