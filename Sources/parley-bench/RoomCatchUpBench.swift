import Foundation
import ParleyCore

/// Row 15: bob catches up a room's history from one member (issue 30, the office story at
/// scale), against the same messages sent to him directly. Three real parleyd on loopback,
/// durability full, every pair verified (so no receive quota of a stranger's standing
/// applies). Room: alice, bob and carol are members of #catchup; bob is stopped; alice
/// writes N room messages (carol stores them); alice is stopped; bob starts knowing only
/// carol's address: time from bob's start to bob holding all N (`rooms.list` unread), and
/// the bytes bob's sockets received meanwhile (`ss -tip`, bytes_received). Reference: a
/// fresh verified pair; its bob stopped, its alice writes N direct messages to him, then he
/// starts knowing her: the same measures, for the same bodies.
struct RoomCatchUpBench {
    let scale: BenchScale
    let binary: String
    let workDir: String

    static let roomName = "catchup"

    func run() -> [BenchRow] {
        let n = scale.smoke ? 300 : 10_000
        do {
            let r = try measure(n: n)
            let note =
                "\(n) messages of ~40 bytes; parleyd on loopback, durability full, verified; bob starts knowing only "
                + "carol (room; alice offline) or alice (direct, a fresh pair); writing them took alice "
                + String(format: "%.1f s (room) and %.1f s (direct)", r.writeRoom, r.writeDirect)
            return [
                BenchRow(
                    id: "15a", measure: "Catch up \(n) room messages from one member", unit: "s", parley: r.room.time,
                    reference: r.direct.time, referenceName: "the same \(n) sent to bob directly, from alice",
                    goal: .none, note: note),
                BenchRow(
                    id: "15b", measure: "Catch up \(n) room messages: bytes bob received", unit: "KiB",
                    parley: Double(r.room.bytes) / 1024, reference: Double(r.direct.bytes) / 1024,
                    referenceName: "the same \(n) sent directly", goal: .none,
                    note: "bytes_received of bob's TCP sockets (ss -tip) from his start to the last message")
            ]
        } catch {
            return [
                .skipped(
                    id: "15a", measure: "Catch up \(n) room messages from one member", unit: "s",
                    referenceName: "the same sent directly", goal: .none, why: "\(error)")
            ]
        }
    }

    struct CatchUp {
        var time = 0.0
        var bytes = 0
    }

    struct Figures {
        var room = CatchUp()
        var direct = CatchUp()
        var writeRoom = 0.0
        var writeDirect = 0.0
    }

    private func measure(n: Int) throws -> Figures {
        let deadline = Deadline(seconds: scale.smoke ? 120 : 900)
        var f = Figures()
        let carol = try Parleyd(binary: binary, workDir: workDir, name: "cu-carol")
        defer { carol.stop() }
        var alice: Parleyd? = try Parleyd(
            binary: binary, workDir: workDir, name: "cu-alice", peers: [carol.address])
        defer { alice?.stop() }
        var bob: Parleyd? = try Parleyd(
            binary: binary, workDir: workDir, name: "cu-bob", peers: [alice!.address, carol.address])
        defer { bob?.stop() }
        let all = [alice!, bob!, carol]
        try waitUntil(deadline, "three sessions") { all.allSatisfy { $0.peersOnline() >= 2 } }
        for x in all {
            for y in all where x !== y {
                let fingerprint = (try y.call("node.whoami"))["fingerprint"] as? String ?? ""
                _ = try x.call("trust.verify", params: "{\"peer\":\"\(y.name)\",\"fingerprint\":\"\(fingerprint)\"}")
            }
        }
        _ = try alice!.call(
            "rooms.create", params: "{\"name\":\"\(Self.roomName)\",\"members\":[\"cu-bob\",\"cu-carol\"]}")
        for m in [bob!, carol] {
            try waitUntil(deadline, "\(m.name) invited") { roomStatus(m) == "invited" }
            _ = try m.call("rooms.accept", params: "{\"room\":\"#\(Self.roomName)\"}")
        }
        try waitUntil(deadline, "all joined") { all.allSatisfy { joined($0) == 3 } }

        // The room: bob away, alice writes, carol holds it, alice leaves.
        bob!.stop()
        bob = nil
        f.writeRoom = try write(n, to: "#" + Self.roomName, from: alice!, deadline: deadline)
        try waitUntil(deadline, "carol holds the \(n)") { roomUnread(carol) >= n }
        alice!.stop()
        alice = nil
        let t0 = Date()
        bob = try Parleyd(binary: binary, workDir: workDir, name: "cu-bob", peers: [carol.address])
        try waitUntil(deadline, "bob catches up") { roomUnread(bob!) >= n }
        f.room = CatchUp(time: Date().timeIntervalSince(t0), bytes: socketBytesReceived(pid: bob!.pid))

        bob!.stop()
        bob = nil

        // The reference: the same bodies, directly, between a fresh pair (alice's outbox above
        // still holds her room messages for bob, which would be resent with them).
        let (dalice, dbobFirst) = try startPair(
            binary: binary, workDir: workDir, names: ("cu-dalice", "cu-dbob"), durability: "full")
        defer { dalice.stop() }
        dbobFirst.stop()
        f.writeDirect = try write(n, to: "cu-dbob", from: dalice, deadline: deadline)
        let t1 = Date()
        let dbob = try Parleyd(binary: binary, workDir: workDir, name: "cu-dbob", peers: [dalice.address])
        defer { dbob.stop() }
        try waitUntil(deadline, "bob gets the direct ones") { directUnread(dbob, from: "cu-dalice") >= n }
        f.direct = CatchUp(time: Date().timeIntervalSince(t1), bytes: socketBytesReceived(pid: dbob.pid))
        return f
    }

    /// Writes `n` messages on one control connection, at most 64 unanswered; seconds taken.
    private func write(_ n: Int, to: String, from d: Parleyd, deadline: Deadline) throws -> Double {
        let line = try ControlLine(path: d.socketPath)
        defer { line.close() }
        let t0 = Date()
        var sent = 0
        var answered = 0
        while answered < n {
            while sent < n, sent - answered < 64 {
                try line.write(
                    line.requestLine(
                        method: "messages.send",
                        params: ParleyChatBench.sendParams(to: to, body: "message \(sent) of the catch-up bench")),
                    deadline: deadline)
                sent += 1
            }
            let answer = try line.nextLine(deadline: deadline)
            if ByteScan.find(Array("\"error\"".utf8), in: answer) != nil {
                throw BenchError.protocolError("messages.send: \(String(decoding: answer, as: UTF8.self))")
            }
            if ByteScan.find(Array("\"id\"".utf8), in: answer) != nil { answered += 1 }
        }
        return Date().timeIntervalSince(t0)
    }

    private func room(_ d: Parleyd) -> [String: Any]? {
        guard let r = try? d.call("rooms.list"), let rooms = r["rooms"] as? [[String: Any]] else { return nil }
        return rooms.first { $0["name"] as? String == Self.roomName }
    }

    private func roomStatus(_ d: Parleyd) -> String? { room(d)?["status"] as? String }

    private func joined(_ d: Parleyd) -> Int {
        guard let members = room(d)?["members"] as? [[String: Any]] else { return 0 }
        return members.filter { $0["joined"] as? Bool ?? false }.count
    }

    private func roomUnread(_ d: Parleyd) -> Int { room(d)?["unread"] as? Int ?? 0 }

    private func directUnread(_ d: Parleyd, from name: String) -> Int {
        guard let r = try? d.call("peers.list"), let peers = r["peers"] as? [[String: Any]] else { return 0 }
        return peers.first { $0["name"] as? String == name }?["unread"] as? Int ?? 0
    }

    /// Sum of bytes_received over the TCP sockets of `pid` (`ss -tinp`).
    private func socketBytesReceived(pid: Int32) -> Int {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
        p.arguments = ["-tinpH"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return 0 }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        var total = 0
        var mine = false
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            if !line.hasPrefix(" ") && !line.hasPrefix("\t") {
                mine = line.contains("pid=\(pid),")
                continue
            }
            guard mine, let r = line.range(of: "bytes_received:") else { continue }
            let digits = line[r.upperBound...].prefix { $0.isNumber }
            total += Int(digits) ?? 0
        }
        return total
    }
}
