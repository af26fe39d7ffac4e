/// Row 3: one message in flight, judged against the physical floor of a durable design.
///
/// The floor is what any messenger that acknowledges only stored messages must pay once:
/// one `fdatasync` of a small record on the same filesystem, plus one relay hop over
/// loopback (ngircd in the same run, a relay that stores nothing). A durable design need
/// not pay two fsyncs in series: the sender can transmit while its own commit is in
/// flight, as long as its client hears "sent" only after the commit and the receiver
/// acknowledges only what it stored.
extension ParleyBench {
    /// The goals against that floor: median ≤ 2× (issue 32, which replaces issue 21's 1.5×:
    /// one fdatasync and one relay hop is the floor, and issue 32 allows the second side's
    /// commit to overlap only where the crash guarantees allow), p99 ≤ 3× (issue 21).
    static let latencyMedianFloorRatio = 2.0
    static let latencyP99FloorRatio = 3.0

    func latencyRows(
        chat: ParleyChatBench, irc: IRCRelayBench?, relayError: String, scale: BenchScale,
        parleyd: String, work: String
    ) -> [BenchRow] {
        var relay: Samples?
        var notes: [String] = relayError.isEmpty ? [] : [relayError]
        if let irc {
            do { relay = try irc.latency(count: scale.latencyMessages) } catch { notes.append("IRC: \(error)") }
        }
        var fsync: Samples?
        do { fsync = try FsyncProbe.measure(directory: work, count: scale.latencyMessages) } catch {
            notes.append("fdatasync probe: \(error)")
        }
        // Both parts or no floor: either alone would flatter Parley.
        let floorMedian = relay.flatMap { r in fsync.map { ($0.median + r.median) / 1000 } }
        let floorP99 = relay.flatMap { r in fsync.map { ($0.p99 + r.p99) / 1000 } }
        let floorName = "floor: fdatasync 64 B + ngircd hop"
        let parts =
            "floor = fdatasync \(fsync.map { fmt($0.median / 1000) } ?? "?") µs (p99 \(fsync.map { fmt($0.p99 / 1000) } ?? "?")) "
            + "+ ngircd hop \(relay.map { fmt($0.median / 1000) } ?? "?") µs (p99 \(relay.map { fmt($0.p99 / 1000) } ?? "?"))"
        let refNote = notes.isEmpty ? "" : "; " + notes.joined(separator: "; ")
        do {
            let run = try chat.latency(count: scale.latencyMessages)
            let p = run.samples
            let cpu = "daemon CPU per message: A \(fmt(run.cpuA)) µs, B \(fmt(run.cpuB)) µs"
            var rows = [
                BenchRow(
                    id: "3a", measure: "Chat latency one-way, median (durability full)", unit: "µs",
                    parley: p.median / 1000, reference: floorMedian, referenceName: floorName,
                    goal: .ratioAtMost(Self.latencyMedianFloorRatio),
                    note:
                        "\(p.count) messages, one in flight; control A → parleyd A → parleyd B → subscriber on B; \(cpu); \(parts)"
                        + refNote),
                BenchRow(
                    id: "3b", measure: "Chat latency one-way, p99 (durability full)", unit: "µs",
                    parley: p.p99 / 1000, reference: floorP99, referenceName: floorName,
                    goal: .ratioAtMost(Self.latencyP99FloorRatio), note: "floor p99 = the sum of the two parts' p99"),
                BenchRow(
                    id: "3d", measure: "Chat latency one-way, median, against the relay alone", unit: "µs",
                    parley: p.median / 1000, reference: relay.map { $0.median / 1000 },
                    referenceName: "ngircd, 2 clients (stores nothing)", goal: .none,
                    note: "ngircd p99 \(relay.map { fmt($0.p99 / 1000) } ?? "?") µs")
            ]
            // The same path with durability normal (no fsync per commit) shows what the disk costs.
            if let (na, nb) = try? startPair(
                binary: parleyd, workDir: work, names: ("carol", "dave"), durability: "normal")
            {
                defer {
                    na.stop()
                    nb.stop()
                }
                if let r = try? ParleyChatBench(scale: scale, a: na, b: nb).latency(count: scale.latencyMessages) {
                    let q = r.samples
                    rows.append(
                        BenchRow(
                            id: "3c", measure: "Chat latency one-way, median (durability normal)", unit: "µs",
                            parley: q.median / 1000, reference: relay.map { $0.median / 1000 },
                            referenceName: "ngircd, 2 clients (stores nothing)", goal: .none,
                            note: "same path, SQLite synchronous=NORMAL; p99 \(fmt(q.p99 / 1000)) µs; "
                                + "daemon CPU per message: A \(fmt(r.cpuA)) µs, B \(fmt(r.cpuB)) µs"))
                }
            }
            return rows
        } catch {
            return [
                .skipped(
                    id: "3a", measure: "Chat latency one-way, median", unit: "µs", referenceName: floorName,
                    goal: .ratioAtMost(Self.latencyMedianFloorRatio), why: "\(error)"),
                .skipped(
                    id: "3b", measure: "Chat latency one-way, p99", unit: "µs", referenceName: floorName,
                    goal: .ratioAtMost(Self.latencyP99FloorRatio), why: "\(error)")
            ]
        }
    }
}
