import Foundation
import ParleyCore
import ParleyStore
import SeededRandom

/// Row 12: a daemon whose store holds a large history (1,000,000 messages over 200 peers
/// and 20 rooms in the full run). The history is written straight into the daemon's
/// SQLite file through ParleyStore's own API (`storeIncoming`, `storeIncomingRoomMessages`,
/// 10,000 messages per transaction, durability normal while building), exactly the rows
/// and search index the daemon would have written itself, only faster. Then the daemon is
/// started on it and timed on what a person does first: start, open a conversation, search.
/// The reference is the same daemon on the same peers and rooms with an empty history.
struct LargeHistoryBench {
    let scale: BenchScale
    let parleyd: String
    let parley: String
    let workDir: String

    /// The issue's goals.
    static let goalReadyMs = 1_000.0
    static let goalPageMs = 5.0
    static let goalSearchMs = 50.0
    static let goalRSSMiB = 64.0
    /// Messages per write transaction while building.
    static let buildBatch = 10_000
    /// The page a conversation opens on (`messages.list` without cursors, its default size).
    static let pageSize = 50
    static let name = "history"

    /// What each row measures: one place for the titles of the measured and the skipped rows.
    enum Row: String, CaseIterable {
        case ready = "12a", rss = "12b", page = "12c", search = "12d", peersList = "12e", export = "12f"

        var measure: String {
            switch self {
            case .ready: "Large history: daemon start → control socket answers"
            case .rss: "Large history: daemon RSS after ready"
            case .page: "Large history: newest page of a conversation, median"
            case .search: "Large history: search, median"
            case .peersList: "Large history: peers.list with unread counts, median"
            case .export: "Large history: export, whole history"
            }
        }
        var unit: String {
            switch self {
            case .ready, .page, .search, .peersList: "ms"
            case .rss: "MiB"
            case .export: "msg/s"
            }
        }
        var goal: BenchRow.Goal {
            switch self {
            case .ready: .valueAtMost(LargeHistoryBench.goalReadyMs)
            case .rss: .valueAtMost(LargeHistoryBench.goalRSSMiB)
            case .page: .valueAtMost(LargeHistoryBench.goalPageMs)
            case .search: .valueAtMost(LargeHistoryBench.goalSearchMs)
            case .peersList, .export: .none
            }
        }
        var referenceName: String {
            switch self {
            case .ready: "same daemon, same peers and rooms, empty history"
            case .rss: "same daemon, empty history"
            case .page, .peersList: "same call, empty history"
            case .search: "same query, empty history"
            case .export: "ParleyStore paging the same history in process"
            }
        }

        func measured(parley: Double, reference: Double, note: String) -> BenchRow {
            BenchRow(
                id: rawValue, measure: measure, unit: unit, parley: parley, reference: reference,
                referenceName: referenceName, goal: goal, note: note)
        }
        func skipped(why: String) -> BenchRow {
            .skipped(id: rawValue, measure: measure, unit: unit, referenceName: referenceName, goal: goal, why: why)
        }
    }

    /// Rows 12a–12f. A failure while building the history or timing the daemon skips them
    /// all with its reason; a failed export (it alone needs the `parley` binary) skips 12f
    /// only, and 12a–12e keep their figures.
    func run() -> [BenchRow] {
        do { return try measureAll() } catch {
            return Row.allCases.map { $0.skipped(why: "\(error)") }
        }
    }

    struct Calls {
        var readyMs = 0.0
        var rssMiB = 0.0
        var page = Samples()
        var search = Samples()
        var rareSearch = Samples()
        var peersList = Samples()
    }

    private func measureAll() throws -> [BenchRow] {
        let stateDir = workDir + "/\(Self.name)-state"
        // 1. A first start makes the node's keys and store; its identity is the recipient.
        let me: String
        do {
            let d = try Parleyd(binary: parleyd, workDir: workDir, name: Self.name)
            defer { d.stop() }
            guard let key = try d.call("node.whoami")["identityKey"] as? String else {
                throw BenchError.protocolError("node.whoami has no identityKey")
            }
            me = key
        }
        // 2. The same peers and rooms, no messages: the reference.
        let book = try HistoryBook(scale: scale, me: me)
        let store = try Store(directory: stateDir, durability: .normal)
        try book.addPeersAndRooms(to: store)
        try store.close()
        let reference = try measureDaemon(book: book)

        // 3. The history.
        let buildStart = Clock.nowNs()
        let full = try Store(directory: stateDir, durability: .normal)
        try book.addMessages(to: full)
        let buildSeconds = Double(Clock.nowNs() - buildStart) / 1e9
        // The export's reference: the store's own paging through the same history, in process.
        let pagingStart = Clock.nowNs()
        var cursor: Int64? = nil
        var paged = 0
        while true {
            let page = try full.messages(peer: nil, after: cursor, limit: 1000)
            guard let last = page.last else { break }
            paged += page.count
            cursor = last.rowID
        }
        let pagingRate = Double(paged) / (Double(Clock.nowNs() - pagingStart) / 1e9)
        try full.close()
        let dbBytes = fileBytes(stateDir)

        let measured = try measureDaemon(book: book)
        let exportRow: BenchRow
        do {
            let (exported, exportSeconds) = try export()
            exportRow = Row.export.measured(
                parley: Double(exported) / exportSeconds, reference: pagingRate,
                note: "`parley export --format json` (pages of 1,000 through messages.list) → a pipe; "
                    + "\(String(exported).withThousands) lines in \(fmt(exportSeconds)) s")
        } catch {
            exportRow = Row.export.skipped(why: "\(error)")
        }

        let size =
            "\(String(scale.historyMessages).withThousands) messages, \(scale.historyPeers) peers, \(scale.historyRooms) rooms"
        let built =
            "built in \(fmt(buildSeconds)) s through ParleyStore (\(String(Self.buildBatch).withThousands) per transaction); "
            + "store \(fmt(Double(dbBytes) / 1_048_576)) MiB"
        let n = measured.page.count
        return [
            Row.ready.measured(
                parley: measured.readyMs, reference: reference.readyMs,
                note: "\(size); \(built); process spawn → first node.status answer (polled every 20 ms)"),
            Row.rss.measured(
                parley: measured.rssMiB, reference: reference.rssMiB, note: "VmRSS after the calls of 12c–12e"),
            Row.page.measured(
                parley: measured.page.median / 1e6, reference: reference.page.median / 1e6,
                note:
                    "messages.list {peer, limit \(Self.pageSize)} on one control connection, \(n) calls over "
                    + "as many conversations (peers and rooms), p99 \(fmt(measured.page.p99 / 1e6)) ms"),
            Row.search.measured(
                parley: measured.search.median / 1e6, reference: reference.search.median / 1e6,
                note:
                    "messages.search for a word in ~\(fmt(book.commonWordShare * 100)) % of the messages "
                    + "(default 20 hits, bm25), \(n) calls, p99 \(fmt(measured.search.p99 / 1e6)) ms; "
                    + "a word in ~\(fmt(book.rareWordShare * 100)) %: median \(fmt(measured.rareSearch.median / 1e6)) ms"
            ),
            Row.peersList.measured(
                parley: measured.peersList.median / 1e6, reference: reference.peersList.median / 1e6,
                note:
                    "\(scale.historyPeers) peers; the last \(String(LargeHistoryBench.buildBatch).withThousands) messages unread, "
                    + "the rest read; \(n) calls, p99 "
                    + "\(fmt(measured.peersList.p99 / 1e6)) ms"),
            exportRow
        ]
    }

    /// Starts the daemon on the prepared store and times the everyday calls.
    private func measureDaemon(book: HistoryBook) throws -> Calls {
        var c = Calls()
        let t0 = Clock.nowNs()
        let d = try Parleyd(binary: parleyd, workDir: workDir, name: Self.name)
        defer { d.stop() }
        c.readyMs = Double(Clock.nowNs() - t0) / 1e6
        let line = try ControlLine(path: d.socketPath)
        defer { line.close() }
        let conversations = book.peerNames + book.roomNames.map { "#" + $0 }
        for i in 0..<scale.historyCalls {
            let who = conversations[i % conversations.count]
            c.page.add(try timedCall(line, "messages.list", "{\"peer\":\"\(who)\",\"limit\":\(Self.pageSize)}"))
            c.search.add(try timedCall(line, "messages.search", "{\"query\":\"\(book.commonWord)\"}"))
            c.rareSearch.add(try timedCall(line, "messages.search", "{\"query\":\"\(book.rareWord(i))\"}"))
            c.peersList.add(try timedCall(line, "peers.list", nil))
        }
        c.rssMiB = Double(d.child.rssKiB() ?? 0) / 1024
        return c
    }

    private func timedCall(_ line: ControlLine, _ method: String, _ params: String?) throws -> UInt64 {
        let t0 = Clock.nowNs()
        _ = try line.call(method, params: params, timeout: scale.officeRowSeconds)
        return Clock.nowNs() - t0
    }

    /// `parley export --format json` of the whole history into `wc -l`; bounded in time.
    private func export() throws -> (Int, Double) {
        guard FileManager.default.isExecutableFile(atPath: parley) else {
            throw BenchError.unavailable("\(parley) not found: build it with `swift build --product parley`")
        }
        let d = try Parleyd(binary: parleyd, workDir: workDir, name: Self.name)
        defer { d.stop() }
        let t0 = Clock.nowNs()
        let (status, out) = try runToCompletion(
            "/bin/bash", ["-c", "set -o pipefail; '\(parley)' export --socket '\(d.socketPath)' --format json | wc -l"],
            timeout: scale.officeRowSeconds * 3)
        let seconds = Double(Clock.nowNs() - t0) / 1e9
        guard status == 0, let lines = Int(out.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchError.process("parley export failed (\(status)): \(out.suffix(300))")
        }
        return (lines, seconds)
    }

    private func fileBytes(_ dir: String) -> Int {
        let fm = FileManager.default
        let names = (try? fm.contentsOfDirectory(atPath: dir)) ?? []
        return names.filter { $0.hasPrefix("store") || $0.hasSuffix(".sqlite") || $0.hasSuffix("-wal") }
            .compactMap { (try? fm.attributesOfItem(atPath: dir + "/" + $0))?[.size] as? Int }
            .reduce(0, +)
    }
}

/// The synthetic history of row 12: who, which rooms, and the words of each body. Bodies
/// are 6–17 words drawn from a vocabulary with a skewed (Zipf-like) frequency, as chat is:
/// a few words are everywhere, most are rare. Deterministic (a fixed seed), so every run
/// searches the same text.
struct HistoryBook {
    let scale: BenchScale
    let me: String
    let peers: [BenchIdentity]
    let peerNames: [String]
    let roomNames: [String]
    let roomIDs: [String]
    let vocabulary: [String]
    /// Rank of the judged search word in the vocabulary, and its share of messages.
    static let commonRank = 40
    static let vocabularySize = 5_000

    init(scale: BenchScale, me: String) throws {
        self.scale = scale
        self.me = me
        peerNames = (0..<scale.historyPeers).map { String(format: "hist-%03d", $0) }
        peers = try peerNames.map { try BenchIdentity(name: $0) }
        roomNames = (0..<scale.historyRooms).map { String(format: "room-%02d", $0) }
        var rng = SplitMix64(seed: 21)
        roomIDs = roomNames.map { _ in (0..<2).map { _ in String(format: "%016llx", rng.next()) }.joined() }
        let syllables = [
            "ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "do", "fe", "gu", "ha", "ji", "ko", "le", "mu",
            "no", "pi", "qua", "ro", "si", "tu", "va", "we", "xo", "ya", "ze", "bri"
        ]
        var words: [String] = []
        var seen = Set<String>()
        while words.count < Self.vocabularySize {
            let n = 2 + Int(rng.next() % 3)
            let w = (0..<n).map { _ in syllables[Int(rng.next() % UInt64(syllables.count))] }.joined()
            if seen.insert(w).inserted { words.append(w) }
        }
        vocabulary = words
    }

    var commonWord: String { vocabulary[Self.commonRank] }
    /// A word drawn rarely (rank in the last tenth of the vocabulary), a different one per call.
    func rareWord(_ i: Int) -> String { vocabulary[Self.vocabularySize - 1 - (i * 7) % (Self.vocabularySize / 10)] }

    /// Rank r is drawn with probability ∝ 1/(r+1) (Zipf, s = 1) by inverting its
    /// cumulative sum ≈ ln(r+1) / ln(V+1).
    private func draw(_ rng: inout SplitMix64) -> Int {
        let u = Double(rng.next() >> 11) / Double(1 << 53)
        let r = Int(exp(u * log(Double(Self.vocabularySize + 1)))) - 1
        return min(max(r, 0), Self.vocabularySize - 1)
    }

    /// Expected share of messages holding the word at `rank` (about 11.5 words a body).
    private func share(_ rank: Int) -> Double {
        let p = log(Double(rank + 2) / Double(rank + 1)) / log(Double(Self.vocabularySize + 1))
        return 1 - pow(1 - p, 11.5)
    }
    var commonWordShare: Double { share(Self.commonRank) }
    var rareWordShare: Double { share(Self.vocabularySize - Self.vocabularySize / 20) }

    func addPeersAndRooms(to store: Store) throws {
        let now = Int64(BenchIdentity.unixSeconds()) * 1000
        for p in peers {
            try store.upsertPeer(
                PeerRecord(
                    identity: p.identity.publicKey, displayName: p.card.displayName, hostName: "bench.invalid",
                    card: p.card.encoded(), cardSequence: 1, noiseKey: p.noiseStatic.publicKey, trust: .pinned,
                    firstSeen: now, lastSeen: now))
        }
        for (i, id) in roomIDs.enumerated() {
            // Stored as history (status retired: no operations to resolve), so the row
            // measures messages, not room resolution; rooms.list, messages.list '#room',
            // search and export read them as any other room.
            let myKey = try IdentityPublicKey(bytes: Sodium.fromHex(me) ?? [])
            let members = ([myKey] + peers.prefix(8).map { $0.identity.publicKey }).sorted()
            let roomID = RoomID(exactly: Sodium.fromHex(id) ?? [])
            try store.saveRoom(
                RoomRecord(
                    id: roomID, root: RoomOperationHash(exactly: roomID.bytes + roomID.bytes), name: roomNames[i],
                    creator: myKey, createdAt: now, version: 1, members: members, status: .retired, updatedAt: now))
        }
    }

    /// Round-robin over the conversations (every peer and every room), in batches.
    func addMessages(to store: Store) throws {
        var rng = SplitMix64(seed: 1_000_003)
        let conversations = scale.historyPeers + scale.historyRooms
        let start = Int64(BenchIdentity.unixSeconds()) * 1000 - Int64(scale.historyMessages) * 1000
        var sequences = [Int64](repeating: 0, count: scale.historyPeers)
        var i = 0
        while i < scale.historyMessages {
            let end = min(i + LargeHistoryBench.buildBatch, scale.historyMessages)
            let meKey = IdentityPublicKey(hex: me)!
            var direct: [IncomingMessage] = []
            var rooms: [Int: [IncomingMessage]] = [:]
            for k in i..<end {
                let c = k % conversations
                let wordCount = 6 + Int(rng.next() % 12)
                let body = (0..<wordCount).map { _ in vocabulary[draw(&rng)] }.joined(separator: " ")
                let id = MessageID(hex: String(format: "%016llx%016llx", rng.next(), UInt64(k)))!
                let at = start + Int64(k) * 1000
                if c < scale.historyPeers {
                    sequences[c] += 1
                    direct.append(
                        IncomingMessage(
                            id: id, sender: peers[c].identity.publicKey, recipient: meKey, sequence: sequences[c],
                            createdAt: at, body: body))
                } else {
                    let author = peers[k % 8]
                    rooms[c - scale.historyPeers, default: []].append(
                        IncomingMessage(
                            id: id, sender: author.identity.publicKey, recipient: meKey, sequence: Int64(k),
                            createdAt: at, body: body))
                }
            }
            let at = Int64(BenchIdentity.unixSeconds()) * 1000
            if end == scale.historyMessages {
                // The person has read everything but the last batch (they were away for it),
                // as after any working day: unread counts are of the last batch only.
                for p in peers {
                    _ = try store.markIncomingRead(
                        from: p.identity.publicKey, upTo: nil, at: at, queueReceipts: false)
                }
                for id in roomIDs { _ = try store.markRoomRead(room: RoomID(hex: id)!, upTo: nil, at: at) }
            }
            _ = try store.storeIncoming(direct, at: at)
            for (r, list) in rooms {
                _ = try store.storeIncomingRoomMessages(list, room: RoomID(hex: roomIDs[r])!, at: at)
            }
            i = end
        }
    }
}
