import Foundation

/// Row 13: a switch comes back. 200 in-process peers (`PeerSwarm`, each its own identity)
/// have sessions with one daemon; every link drops; the daemon's user sends each of them
/// a few messages (queued: nobody is online); then all 200 dial again at once (several
/// threads, each connection its own loopback source address). Measured: from the first
/// dial until every session is up (every handshake done) and until the daemon saw every
/// queued message acknowledged (`message.delivered` on a subscriber). References from the
/// same run and daemon: the first, cold connection of the same peers with the same
/// dialers, and the same number of messages sent while every session is up.
struct ReconnectStormBench {
    let scale: BenchScale
    let binary: String
    let workDir: String

    func run() -> [BenchRow] {
        let p = scale.stormPeers
        let k = scale.stormQueuedPerPeer
        do {
            let r = try measure()
            let common =
                "\(p) peers, \(k) messages queued for each, \(scale.stormDialers) threads dialling; "
                + "each peer acknowledges what it receives"
            return [
                BenchRow(
                    id: "13a", measure: "Reconnect storm: \(p) peers back → every queued message delivered",
                    unit: "ms", parley: r.stormDeliveredMs, reference: r.warmSendMs,
                    referenceName: "the same \(p * k) messages sent with every session up", goal: .none,
                    note: common + "; first dial → the last message.delivered on the daemon's subscriber"),
                BenchRow(
                    id: "13b", measure: "Reconnect storm: \(p) peers back → every session up", unit: "ms",
                    parley: r.stormSessionsMs, reference: r.coldSessionsMs,
                    referenceName: "the same peers' first connection (no queue)", goal: .none,
                    note: "first dial → last handshake finished (ping answered is not waited for); "
                        + "daemon CPU during the storm \(fmt(r.stormCPUMs)) ms")
            ]
        } catch {
            return [
                .skipped(
                    id: "13a", measure: "Reconnect storm: \(p) peers back → every queued message delivered",
                    unit: "ms", referenceName: "same messages, sessions up", goal: .none, why: "\(error)")
            ]
        }
    }

    struct Figures {
        var coldSessionsMs = 0.0
        var warmSendMs = 0.0
        var stormSessionsMs = 0.0
        var stormDeliveredMs = 0.0
        var stormCPUMs = 0.0
    }

    private func measure() throws -> Figures {
        let p = scale.stormPeers
        let k = scale.stormQueuedPerPeer
        let deadline = Deadline(seconds: scale.officeRowSeconds * 2)
        let daemon = try Parleyd(binary: binary, workDir: workDir, name: "storm")
        defer { daemon.stop() }
        let identities = try (0..<p).map { try BenchIdentity(name: String(format: "storm-%03d", $0)) }
        let watcher = try DeliveryWatcher(daemon: daemon)
        defer { watcher.close() }
        let sender = try ControlLine(path: daemon.socketPath)
        defer { sender.close() }
        var f = Figures()

        // Cold: the peers' first connection.
        let first = PeerSwarm()
        first.start()
        var t0 = Clock.nowNs()
        try first.connect(port: daemon.port, identities: identities, parallel: scale.stormDialers, deadline: deadline)
        f.coldSessionsMs = Double(Clock.nowNs() - t0) / 1e6
        try waitUntil(deadline, "\(p) sessions online") { daemon.peersOnline() >= p }

        // Reference: the same messages with every session up.
        t0 = Clock.nowNs()
        try sendAll(sender, identities, tag: "warm", deadline: deadline)
        _ = try watcher.waitFor(watcher.delivered + p * k, deadline: deadline)
        f.warmSendMs = Double(Clock.nowNs() - t0) / 1e6
        try readAnswers(sender, p * k, deadline: deadline)

        // Every link drops; messages queue.
        first.stopAndClose()
        try waitUntil(deadline, "every session down") { daemon.peersOnline() == 0 }
        try sendAll(sender, identities, tag: "queued", deadline: deadline)
        try readAnswers(sender, p * k, deadline: deadline)
        let target = watcher.delivered + p * k

        // The storm.
        let storm = PeerSwarm()
        storm.start()
        defer { storm.stopAndClose() }
        let cpu0 = ProcessCPU.nanoseconds(pid: daemon.pid)
        t0 = Clock.nowNs()
        try storm.connect(port: daemon.port, identities: identities, parallel: scale.stormDialers, deadline: deadline)
        f.stormSessionsMs = Double(Clock.nowNs() - t0) / 1e6
        let done = try watcher.waitFor(target, deadline: deadline)
        f.stormDeliveredMs = Double(done - t0) / 1e6
        f.stormCPUMs = Double(ProcessCPU.since(cpu0, pid: daemon.pid)) / 1e6
        if storm.chats.get() < p * k {
            throw BenchError.protocolError("peers received \(storm.chats.get()) of \(p * k) queued messages")
        }
        if let e = storm.error { throw BenchError.protocolError("a peer's session failed: \(e)") }
        return f
    }

    /// `stormQueuedPerPeer` messages to every peer, pipelined on one control connection.
    private func sendAll(_ sender: ControlLine, _ ids: [BenchIdentity], tag: String, deadline: Deadline) throws {
        var bytes: [UInt8] = []
        for j in 0..<scale.stormQueuedPerPeer {
            for id in ids {
                bytes += sender.requestLine(
                    method: "messages.send",
                    params: ParleyChatBench.sendParams(to: id.card.displayName, body: "\(tag) \(j)"))
            }
        }
        try sender.write(bytes, deadline: deadline)
    }

    private func readAnswers(_ sender: ControlLine, _ n: Int, deadline: Deadline) throws {
        for _ in 0..<n {
            let answer = try sender.nextLine(deadline: deadline)
            if ByteScan.contains(Array("\"error\"".utf8), in: answer) {
                throw BenchError.protocolError("messages.send: \(String(decoding: answer, as: UTF8.self))")
            }
        }
    }
}
