import Foundation
import GRDB
import ParleyCore
import XCTest

@testable import ParleyStore

/// History pages (newest first by default) and full-text search, on real SQLite files.
final class StoreHistoryAndSearchTests: StoreDirectoryTestCase {
    private let me = String(repeating: "01", count: 32)
    private let alice = String(repeating: "a1", count: 32)
    private let bob = String(repeating: "b0", count: 32)

    private func messageID(_ n: Int) -> String { String(format: "%032x", n) }

    private func open() throws -> Store { try Store(directory: directory, durability: .normal) }

    /// `count` messages with alice (odd n incoming, even outgoing) with these bodies.
    @discardableResult
    private func conversation(_ store: Store, bodies: [String], firstID: Int = 1, with peer: String? = nil) throws
        -> [Int64]
    {
        let peer = peer ?? alice
        var rows: [Int64] = []
        for (i, body) in bodies.enumerated() {
            let n = firstID + i
            if n % 2 == 1 {
                let m = IncomingMessage(
                    id: messageID(n), sender: peer, recipient: me, sequence: Int64(n),
                    createdAt: Int64(n), body: body)
                rows.append(try store.storeIncoming([m], at: Int64(n))[0].message.rowID)
            } else {
                let m = NewOutgoingMessage(id: messageID(n), recipient: peer, body: body, createdAt: Int64(n))
                rows.append(try store.enqueue([m], sender: me)[0].rowID)
            }
        }
        return rows
    }

    // MARK: - History

    /// Changes a stored row with the sqlite3 program while no store has the file open (the
    /// daemon holds it exclusively), as damage (or a bad edit) outside parleyd would, CHECK
    /// constraints off.
    private func damage(_ sql: String) throws { try damageStore(in: directory, sql) }

    /// One damaged row (its id no longer 16 bytes) does not take the conversation with it:
    /// every page that holds it is returned without it, names it in `unreadable`, and
    /// paging in both directions goes on past it, even when a page holds nothing else.
    func testADamagedRowIsLeftOutOfItsPageAndNamedAndPagingGoesOn() throws {
        let rows = try conversation(try open(), bodies: (1...7).map { "m\($0)" })  // closed again
        try damage("UPDATE message SET id = x'0102' WHERE row_id = \(rows[4])")
        let store = try open()

        let page = try store.historyPage(.peer(alice), after: nil, before: nil, limit: 3)
        XCTAssertEqual(page.messages.map(\.body), ["m6", "m7"], "the rest of the page")
        XCTAssertEqual(page.unreadable.map(\.rowID), [rows[4]])
        XCTAssertTrue(page.unreadable.first?.problem.contains("message.id") == true, "\(page.unreadable)")
        XCTAssertTrue(page.hasOlder)

        // A page of the damaged row alone: empty, named, and both sides still reachable.
        let alone = try store.historyPage(.peer(alice), after: rows[3], before: rows[5], limit: 3)
        XCTAssertEqual(alone.messages, [])
        XCTAssertEqual(alone.unreadable.map(\.rowID), [rows[4]])
        XCTAssertTrue(alone.hasOlder)
        XCTAssertTrue(alone.hasNewer)

        // Paging forward from the start, as `parley export` does, reads every other message.
        var after: Int64 = 0
        var bodies: [String] = []
        var unreadable: [Int64] = []
        for _ in 0..<10 {
            let p = try store.historyPage(.peer(alice), after: after, before: nil, limit: 2)
            bodies += p.messages.map(\.body)
            unreadable += p.unreadable.map(\.rowID)
            guard p.hasNewer, let last = (p.messages.map(\.rowID) + p.unreadable.map(\.rowID)).max() else { break }
            after = last
        }
        XCTAssertEqual(bodies, ["m1", "m2", "m3", "m4", "m6", "m7"])
        XCTAssertEqual(unreadable, [rows[4]])

        // Marking the conversation read (`parley read` does after each page) goes past it:
        // the readable incoming ones are marked and owe receipts, the damaged one owes none.
        let marked = try store.markIncomingRead(
            from: IdentityPublicKey(hex: alice)!, upTo: nil, at: 100, queueReceipts: true)
        XCTAssertEqual(marked.map(\.hex), [messageID(1), messageID(3), messageID(7)])
        XCTAssertEqual(
            try store.pendingReadReceipts(to: IdentityPublicKey(hex: alice)!, limit: 10).map(\.hex),
            [messageID(1), messageID(3), messageID(7)])
    }

    func testWithoutCursorsThePageIsTheNewestAndSaysThereIsOlder() throws {
        let store = try open()
        let rows = try conversation(store, bodies: (1...7).map { "m\($0)" })
        let page = try store.historyPage(.peer(alice), after: nil, before: nil, limit: 3)
        XCTAssertEqual(page.messages.map(\.body), ["m5", "m6", "m7"], "the newest three, ascending")
        XCTAssertTrue(page.hasOlder)
        XCTAssertFalse(page.hasNewer)

        // Back from the first shown: the page before it.
        let older = try store.historyPage(.peer(alice), after: nil, before: rows[4], limit: 3)
        XCTAssertEqual(older.messages.map(\.body), ["m2", "m3", "m4"])
        XCTAssertTrue(older.hasOlder)
        XCTAssertTrue(older.hasNewer)
        let oldest = try store.historyPage(.peer(alice), after: nil, before: rows[1], limit: 3)
        XCTAssertEqual(oldest.messages.map(\.body), ["m1"])
        XCTAssertFalse(oldest.hasOlder)
        XCTAssertTrue(oldest.hasNewer)

        // Forward from a cursor: the oldest after it.
        let forward = try store.historyPage(.peer(alice), after: rows[1], before: nil, limit: 2)
        XCTAssertEqual(forward.messages.map(\.body), ["m3", "m4"])
        XCTAssertTrue(forward.hasOlder)
        XCTAssertTrue(forward.hasNewer)
        let end = try store.historyPage(.peer(alice), after: rows[6], before: nil, limit: 2)
        XCTAssertEqual(end.messages, [])
        XCTAssertTrue(end.hasOlder)
        XCTAssertFalse(end.hasNewer)
    }

    func testScopesKeepToTheirConversation() throws {
        let store = try open()
        try conversation(store, bodies: ["a1", "a2"])
        try conversation(store, bodies: ["b1", "b2", "b3"], firstID: 101, with: bob)
        let page = try store.historyPage(.peer(alice), after: nil, before: nil, limit: 10)
        XCTAssertEqual(page.messages.map(\.body), ["a1", "a2"])
        XCTAssertFalse(page.hasOlder, "bob's messages are not alice's older ones")
        let all = try store.historyPage(.everything, after: nil, before: nil, limit: 4)
        XCTAssertEqual(all.messages.map(\.body), ["a2", "b1", "b2", "b3"])
        XCTAssertTrue(all.hasOlder)
        XCTAssertEqual(try store.historyPage(.peer(bob), after: nil, before: nil, limit: 0).messages, [])
        // A scope names a typed key (`HistoryScope.peer(IdentityPublicKey)`): malformed hex
        // cannot reach the store; the control layer parses what a client types.
    }

    // MARK: - Search

    func testSearchIgnoresCaseAndAccentsMatchesPrefixesAndRanks() throws {
        let store = try open()
        try conversation(
            store,
            bodies: [
                "Meet at the Café tomorrow", "lunch?", "the cafe cafe cafe is closed", "Résumé attached",
                "nothing here", "meeting notes"
            ])
        let cafe = try store.search("cafe", scope: .everything, limit: 10).hits
        XCTAssertEqual(Set(cafe.map(\.message.body)), ["Meet at the Café tomorrow", "the cafe cafe cafe is closed"])
        XCTAssertEqual(cafe.first?.message.body, "the cafe cafe cafe is closed", "more occurrences rank first")
        XCTAssertEqual(
            try store.search("RESUME", scope: .everything, limit: 10).hits.map(\.message.body), ["Résumé attached"])
        XCTAssertEqual(
            Set(try store.search("meet", scope: .everything, limit: 10).hits.map(\.message.body)),
            ["Meet at the Café tomorrow", "meeting notes"], "a word is also a prefix")
        XCTAssertEqual(
            try store.search("cafe tomorrow", scope: .everything, limit: 10).hits.map(\.message.body),
            ["Meet at the Café tomorrow"], "every word must appear")
        XCTAssertEqual(try store.search("zebra", scope: .everything, limit: 10).hits, [])
        XCTAssertEqual(
            try store.search("\" OR * NEAR(", scope: .everything, limit: 10).hits, [],
            "FTS5 syntax in a query is plain text, not an error")
        XCTAssertEqual(try store.search("!!!", scope: .everything, limit: 10).hits, [])
    }

    func testSearchFindsChineseAndJapaneseWordsInsideSentences() throws {
        let store = try open()
        try conversation(store, bodies: ["我们明天在东京见面", "東京タワーに行きました", "京都は静かです", "서울에서 만나요"])
        XCTAssertEqual(
            Set(try store.search("东京", scope: .everything, limit: 10).hits.map(\.message.body)),
            ["我们明天在东京见面"])
        XCTAssertEqual(try store.search("東京", scope: .everything, limit: 10).hits.map(\.message.body), ["東京タワーに行きました"])
        XCTAssertEqual(try store.search("タワー", scope: .everything, limit: 10).hits.map(\.message.body), ["東京タワーに行きました"])
        XCTAssertEqual(
            try store.search("京都", scope: .everything, limit: 10).hits.map(\.message.body), ["京都は静かです"],
            "京 alone is in several; 京都 only in one")
        XCTAssertEqual(try store.search("서울", scope: .everything, limit: 10).hits.map(\.message.body), ["서울에서 만나요"])
    }

    func testSearchKeepsToTheScopeAndGivesASnippet() throws {
        let store = try open()
        let long =
            String(repeating: "filler words here ", count: 20) + "the secret is pineapple "
            + String(repeating: "more filler ", count: 20)
        try conversation(store, bodies: [long])
        try conversation(store, bodies: ["pineapple for bob"], firstID: 101, with: bob)
        let hits = try store.search("pineapple", scope: .peer(alice), limit: 10).hits
        XCTAssertEqual(hits.count, 1)
        XCTAssertTrue(hits[0].snippet.contains("the secret is pineapple"), hits[0].snippet)
        XCTAssertTrue(hits[0].snippet.hasPrefix("…") && hits[0].snippet.hasSuffix("…"), hits[0].snippet)
        XCTAssertLessThanOrEqual(hits[0].snippet.count, 82)
        XCTAssertEqual(
            try store.search("pineapple", scope: .peer(bob), limit: 10).hits.map(\.snippet), ["pineapple for bob"])
    }

    func testTheMigrationIndexesMessagesStoredBeforeIt() throws {
        // A store as the previous release left it: the search migration not yet run.
        do {
            let store = try open()
            try conversation(store, bodies: ["stored before search existed"])
            try store.close()
        }
        let queue = try DatabaseQueue(path: directory + "/parley.sqlite")
        try queue.write { db in
            try db.execute(
                sql: """
                    DROP TRIGGER message_search_delete; DROP TRIGGER message_search_update;
                    DROP TABLE message_search;
                    DELETE FROM counter WHERE name = 'search_indexed_through';
                    DELETE FROM grdb_migrations WHERE identifier IN ('message-search-v1', 'message-search-batched-v1');
                    """)
        }
        try queue.close()
        let reopened = try open()
        XCTAssertEqual(
            try reopened.search("existed", scope: .everything, limit: 5).hits.map(\.message.body),
            ["stored before search existed"])
    }

    /// The performance issue's history size: 100,000 messages, searched for a rare word,
    /// a common one and a prefix. Prints the times; fails only if a query takes seconds.
    func testSearchRanksOnlyTheNewestMatchesOfItsScope() throws {
        let store = try open()
        let window = Store.searchRankingWindow
        // The oldest 30 matches would rank first (the word four times), but are older than
        // the window of matches to alice; bob's newer matches must not use up her window.
        var messages: [NewOutgoingMessage] = (0..<30).map {
            NewOutgoingMessage(
                id: messageID($0 + 1), recipient: alice, body: "old apple apple apple apple", createdAt: 0)
        }
        messages += (0..<window).map {
            NewOutgoingMessage(
                id: messageID($0 + 100), recipient: alice, body: "new apple and more words", createdAt: 1)
        }
        messages += (0..<50).map {
            NewOutgoingMessage(
                id: messageID($0 + 100 + window), recipient: bob, body: "bob apple apple apple apple", createdAt: 2)
        }
        _ = try store.enqueue(messages, sender: me)
        let hits = try store.search("apple", scope: .peer(alice), limit: 10).hits
        XCTAssertEqual(hits.count, 10)
        XCTAssertEqual(Set(hits.map(\.message.body)), ["new apple and more words"], "older than the window: not ranked")
        XCTAssertEqual(
            Set(try store.search("apple", scope: .everything, limit: 10).hits.map(\.message.body)),
            ["bob apple apple apple apple"], "the best match of the newest, across conversations")
        XCTAssertEqual(
            try store.search("old apple", scope: .peer(alice), limit: 50).hits.count, 30,
            "a query naming more of an old message's words still finds it")
    }

    func testSearchOnAHundredThousandMessages() throws {
        let store = try open()
        let words = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
            "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"
        ]
        let total = 100_000
        let batch = 5_000
        let started = Date()
        var n = 0
        while n < total {
            let messages = (0..<batch).map { i -> NewOutgoingMessage in
                let k = n + i
                var body = "message \(k): \(words[k % 20]) \(words[(k / 20) % 20]) café réunion"
                if k % 10_000 == 7 { body += " needle" }
                return NewOutgoingMessage(id: messageID(k + 1), recipient: alice, body: body, createdAt: Int64(k))
            }
            _ = try store.enqueue(messages, sender: me)
            n += batch
        }
        print("generated \(total) messages in \(String(format: "%.1f", Date().timeIntervalSince(started))) s")
        for query in ["needle", "tango", "cafe reunion", "nov", "charlie delta"] {
            let t0 = Date()
            let hits = try store.search(query, scope: .peer(alice), limit: 20).hits
            let ms = Date().timeIntervalSince(t0) * 1000
            print("search \"\(query)\" on \(total) messages: \(hits.count) hits in \(String(format: "%.1f", ms)) ms")
            XCTAssertFalse(hits.isEmpty, query)
            XCTAssertLessThan(ms, 5_000, "\(query) took \(ms) ms")
        }
        XCTAssertEqual(try store.search("needle", scope: .everything, limit: 50).hits.count, 10)
    }
}

/// Runs `sql` on the store file in `directory` with Debian's sqlite3 (the store must be
/// closed: the daemon holds it exclusively), as damage (or a bad edit) outside parleyd
/// would, CHECK constraints off.
func damageStore(in directory: String, _ sql: String, file: StaticString = #filePath, line: UInt = #line) throws {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/sqlite3")
    p.arguments = [directory + "/" + Store.fileName, "PRAGMA ignore_check_constraints = ON; " + sql]
    try p.run()
    p.waitUntilExit()
    XCTAssertEqual(p.terminationStatus, 0, "sqlite3 \(sql)", file: file, line: line)
}
