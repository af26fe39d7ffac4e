import Foundation
import ParleyCore

/// Row 11: one message to a room, against the same number of direct messages, both
/// measured in the same run on the same daemon and the same sessions. The members are
/// in-process peers (`PeerSwarm`), each with its own identity; they are invited by
/// `rooms.create` and join as the protocol says (a signed `join`). Time: `messages.send`
/// written on the sender's control socket → `message.delivered` read by a subscriber on
/// it (for a room message the daemon sends that once every member acknowledged, i.e.
/// stored, it). CPU: the sender daemon's, from /proc, over the same span, per member.
struct RoomFanOutBench {
    let scale: BenchScale
    let binary: String
    let workDir: String

    static let roomName = "office"

    func run() -> [BenchRow] {
        var rows: [BenchRow] = []
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        for (k, size) in scale.roomSizes.enumerated() {
            let timeID = "11" + String(letters[2 * k])
            let cpuID = "11" + String(letters[2 * k + 1])
            let timeMeasure = "Room of \(size): send → every member stored it, median"
            let cpuMeasure = "Room of \(size): sender CPU per member"
            guard size <= RoomLimits.maxMembers else {
                let why =
                    "the protocol caps a room at \(RoomLimits.maxMembers) members (docs/PROTOCOL.md \"Room operations\")"
                rows.append(
                    .skipped(
                        id: timeID, measure: timeMeasure, unit: "ms", referenceName: "\(size - 1) direct sends",
                        goal: .none, why: why))
                continue
            }
            do {
                let r = try measure(size: size)
                let rounds = "median of \(r.room.count) rounds"
                rows.append(
                    BenchRow(
                        id: timeID, measure: timeMeasure, unit: "ms", parley: r.room.median / 1e6,
                        reference: r.direct.median / 1e6,
                        referenceName: "\(size - 1) direct sends (one per member), same sessions",
                        goal: .none,
                        note:
                            "\(rounds), p99 \(fmt(r.room.p99 / 1e6)) vs \(fmt(r.direct.p99 / 1e6)) ms; "
                            + "messages.send on A → message.delivered on A (every member acknowledged); "
                            + "\(size - 1) in-process members, each its own identity, joined by a signed join"))
                rows.append(
                    BenchRow(
                        id: cpuID, measure: cpuMeasure, unit: "µs", parley: r.roomCPUPerMember,
                        reference: r.directCPUPerMember,
                        referenceName: "the same \(size - 1) sent as direct messages", goal: .none,
                        note:
                            "sender daemon's utime + stime (/proc/PID/stat, 10 ms ticks, summed) over the \(r.room.count) rounds ÷ members"
                    ))
            } catch {
                rows.append(
                    .skipped(
                        id: timeID, measure: timeMeasure, unit: "ms", referenceName: "\(size - 1) direct sends",
                        goal: .none, why: "\(error)"))
            }
        }
        return rows
    }

    struct Figures {
        var room = Samples()
        var direct = Samples()
        var roomCPUPerMember = 0.0
        var directCPUPerMember = 0.0
    }

    private func measure(size: Int) throws -> Figures {
        let peers = size - 1
        let daemon = try Parleyd(binary: binary, workDir: workDir, name: "fanout-\(size)")
        defer { daemon.stop() }
        let swarm = PeerSwarm()
        swarm.start()
        defer { swarm.stopAndClose() }
        let deadline = Deadline(seconds: scale.officeRowSeconds)
        let identities = try (0..<peers).map { try BenchIdentity(name: String(format: "fan%d-%03d", size, $0)) }
        try swarm.connect(port: daemon.port, identities: identities, parallel: 4, deadline: deadline)
        try waitUntil(deadline, "\(peers) sessions online") { daemon.peersOnline() >= peers }

        // A create lists at most `RoomLimits.maxCreateMembers` (the creator included); the
        // others are added one by one.
        let listed = identities.prefix(RoomLimits.maxCreateMembers - 1)
        let names = listed.map { "\"\($0.card.displayName)\"" }.joined(separator: ",")
        _ = try daemon.call("rooms.create", params: "{\"name\":\"\(Self.roomName)\",\"members\":[\(names)]}")
        for id in identities.dropFirst(listed.count) {
            _ = try daemon.call(
                "rooms.add", params: "{\"room\":\"#\(Self.roomName)\",\"peer\":\"\(id.card.displayName)\"}")
        }
        try waitUntil(deadline, "every member joined") { joinedCount(daemon) >= size }
        // Every member also receives the others' joins (forwarded by the creator): let that
        // traffic finish so it is not timed with the first message.
        let expectedOps = peers * peers  // the create and the other members' joins
        try? waitUntil(Deadline(seconds: 10), "joins forwarded") { swarm.roomOperations.get() >= expectedOps }

        let sender = try ControlLine(path: daemon.socketPath)
        defer { sender.close() }
        let watcher = try DeliveryWatcher(daemon: daemon)
        defer { watcher.close() }

        var f = Figures()
        var roomCPU: UInt64 = 0
        var directCPU: UInt64 = 0
        // One untimed round of each first (caches, first statements prepared).
        for round in 0...scale.fanOutRounds {
            guard !deadline.passed else { throw BenchError.timedOut("only \(round) fan-out rounds") }
            let (t, c) = try timed(daemon: daemon, watcher: watcher, deliveries: 1, sender: sender) {
                [
                    sender.requestLine(
                        method: "messages.send",
                        params: ParleyChatBench.sendParams(to: "#" + Self.roomName, body: "room \(round)"))
                ]
            }
            let (td, cd) = try timed(daemon: daemon, watcher: watcher, deliveries: peers, sender: sender) {
                identities.map {
                    sender.requestLine(
                        method: "messages.send",
                        params: ParleyChatBench.sendParams(to: $0.card.displayName, body: "direct \(round)"))
                }
            }
            if round > 0 {
                f.room.add(t)
                f.direct.add(td)
                roomCPU += c
                directCPU += cd
            }
        }
        let perMember = Double(scale.fanOutRounds * peers)
        f.roomCPUPerMember = Double(roomCPU) / perMember / 1000
        f.directCPUPerMember = Double(directCPU) / perMember / 1000
        if let e = swarm.error { throw BenchError.protocolError("a member's session failed: \(e)") }
        return f
    }

    /// Writes the requests in one go, waits for `deliveries` `message.delivered` and for
    /// every answer; returns the time to the last delivery and the daemon's CPU (ns).
    private func timed(
        daemon: Parleyd, watcher: DeliveryWatcher, deliveries: Int, sender: ControlLine,
        _ requests: () -> [[UInt8]]
    ) throws -> (UInt64, UInt64) {
        let lines = requests()
        let deadline = Deadline(seconds: scale.officeRowSeconds)
        let target = watcher.delivered + deliveries
        let cpu0 = ProcessCPU.nanoseconds(pid: daemon.pid)
        let t0 = Clock.nowNs()
        try sender.write(lines.flatMap { $0 }, deadline: deadline)
        let t1 = try watcher.waitFor(target, deadline: deadline)
        let cpu = ProcessCPU.since(cpu0, pid: daemon.pid)
        for _ in lines {
            let answer = try sender.nextLine(deadline: deadline)
            if ByteScan.contains(Array("\"error\"".utf8), in: answer) {
                throw BenchError.protocolError("messages.send: \(String(decoding: answer, as: UTF8.self))")
            }
        }
        return (t1 - t0, cpu)
    }

    private func joinedCount(_ daemon: Parleyd) -> Int {
        guard let r = try? daemon.call("rooms.list"), let rooms = r["rooms"] as? [[String: Any]],
            let room = rooms.first(where: { ($0["name"] as? String) == Self.roomName }),
            let members = room["members"] as? [[String: Any]]
        else { return 0 }
        return members.filter { ($0["joined"] as? Bool) == true }.count
    }
}

/// Polls `condition` every 20 ms until it holds or `deadline` passes (then throws, naming
/// what was awaited). The condition is read from the daemon, never slept on blindly.
func waitUntil(_ deadline: Deadline, _ what: String, _ condition: () -> Bool) throws(BenchError) {
    while !condition() {
        if deadline.passed { throw .timedOut("waiting for \(what)") }
        Clock.sleep(milliseconds: 20)
    }
}
