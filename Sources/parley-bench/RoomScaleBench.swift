import Foundation
import ParleyCore
import ParleyNodeCore
import RoomSyncSimulation

/// Row 14: one message in a room of 500 members that sync (issue 30, "Rooms as big as an
/// office"), against the same message sent directly to 499 peers. In process
/// (`RoomSyncSimulation`): 500 real `RoomSyncStateMachine`s, the real `RoomFanOut` and
/// `RoomEntitlement` over a room built of signed operations, every two members with a
/// session, 2 ms per record, a mock clock (so the time is the protocol's timers and rounds,
/// not this machine's speed). Bytes are the wire sizes of the records (header, payload,
/// transport tag). The author's CPU is measured for real: one Ed25519 signature of the
/// message plus one ChaCha20-Poly1305 seal per record it sent, against 499 seals of the
/// direct chat record.
struct RoomScaleBench {
    let scale: BenchScale

    func run() -> [BenchRow] {
        let size = scale.smoke ? 100 : 500
        do {
            return try measure(size: size) + operationRows(size: size)
        } catch {
            return [
                .skipped(
                    id: "14a", measure: "Room of \(size): every member holds a message", unit: "s",
                    referenceName: "direct to \(size - 1)", goal: .none, why: "\(error)")
            ]
        }
    }

    private func measure(size: Int) throws -> [BenchRow] {
        var sim = try RoomSyncSimulation(members: size, seed: 30)
        sim.setOnline(Array(0..<size))
        let sessionStart = sim.traffic
        sim.run(until: sim.now + .seconds(1))
        // Steady state: nothing new for a minute.
        sim.resetTraffic()
        let idleStart = sim.now
        sim.run(until: idleStart + .seconds(60))
        let idleBytes = sim.traffic.map { $0.bytesSent }.sorted()[size / 2]
        sim.resetTraffic()
        let start = sim.now
        sim.write(author: 0)
        sim.run(until: start + .seconds(300)) { $0.converged }
        let everyone = sim.now - start
        let converged = sim.converged
        var half = start
        let firsts = (0..<size).compactMap { sim.firstHeld[$0][0]?[1] }.sorted()
        if firsts.count == size { half = firsts[size / 2] }
        // Relays and summaries still pending count too.
        sim.run(until: sim.now + .seconds(10))
        let author = sim.traffic[0]
        let members = sim.traffic.dropFirst()
        let medianBytes = members.map { $0.bytesSent + $0.bytesReceived }.sorted()[members.count / 2]
        let maxBytes = members.map { $0.bytesSent + $0.bytesReceived }.max() ?? 0
        let medianCopies = members.map { $0.redundant + 1 }.sorted()[members.count / 2]
        let directAuthorBytes = (size - 1) * sim.directChatBytes
        let directMemberBytes = sim.directChatBytes + RoomSyncSimulation.ackBytes
        let messagesSentByAuthor = author.recordsSent
        let authorCPU = try cpuMicros(sign: true, seals: messagesSentByAuthor, bytes: sim.signedMessageBytes)
        let directCPU = try cpuMicros(sign: false, seals: size - 1, bytes: sim.directChatBytes)
        let setup =
            "\(size) in-process members (RoomSyncSimulation: real sync state machines, fan-out and entitlement; "
            + "every two with a session; 2 ms per record; mock clock), a 100-byte body"
        let sessionBytes = sessionStart.map { $0.bytesSent }.sorted()[size / 2]
        return [
            BenchRow(
                id: "14a", measure: "Room of \(size): write → every member holds it", unit: "s",
                parley: converged
                    ? Double(everyone.components.seconds) + Double(everyone.components.attoseconds) / 1e18 : nil,
                reference: 0.002, referenceName: "direct to \(size - 1) peers (one record each, 2 ms)", goal: .none,
                note:
                    "\(setup); half the members held it after \(fmtSeconds(half - start)); the rest come by relay rounds "
                    + "(forwardDelay 5 s each) and anti-entropy (15 s)"),
            BenchRow(
                id: "14b", measure: "Room of \(size): author's bytes sent for one message", unit: "KiB",
                parley: Double(author.bytesSent) / 1024, reference: Double(directAuthorBytes) / 1024,
                referenceName: "the same body as \(size - 1) direct chat records", goal: .none,
                note:
                    "\(messagesSentByAuthor) records sent by the author (its \(RoomFanOut.directRecipients) direct "
                    + "recipients, its \(RoomFanOut.relayPeers) relays, summaries, acks)"),
            BenchRow(
                id: "14c", measure: "Room of \(size): author's CPU for one message", unit: "µs",
                parley: authorCPU, reference: directCPU,
                referenceName: "\(size - 1) seals of the direct chat record", goal: .none,
                note: "measured here: one Ed25519 signature + one ChaCha20-Poly1305 seal per record the author sent"),
            BenchRow(
                id: "14d", measure: "Room of \(size): median member's bytes (sent + received)", unit: "B",
                parley: Double(medianBytes), reference: Double(directMemberBytes),
                referenceName: "one direct chat record received + its ack", goal: .none,
                note:
                    "the median member received the message \(medianCopies)× (relays overlap); the busiest member "
                    + "\(maxBytes) B"),
            BenchRow(
                id: "14e", measure: "Room of \(size): sync at steady state, per member per minute", unit: "B",
                parley: Double(idleBytes), reference: nil, referenceName: "—", goal: .none,
                note:
                    "no new messages: one roomHave per room per 15 s (anti-entropy); at session start each member sent "
                    + "a median \(sessionBytes) B over its \(size - 1) sessions (summaries to at most \(RoomSyncLimits.startSummaries) sessions per room)"
            )
        ]
    }

    /// Rows 14f–14h: one membership operation (an add) in a room of `size`, spread as older
    /// nodes do (every member that keeps it sends it to every other) and with operation
    /// summaries (features bit 5: `RoomOperationFanOut`, gaps filled by summaries).
    private func operationRows(size: Int) throws -> [BenchRow] {
        func spread(summaries: Bool) throws -> (
            seconds: Double?, author: Int, median: Int, busiest: Int, copies: Int, logs: Int
        ) {
            var sim = try RoomSyncSimulation(members: size, seed: 31)
            sim.operationSummaries = summaries
            sim.setOnline(Array(0..<size))
            sim.run(until: sim.now + .seconds(1))
            sim.resetTraffic()
            let start = sim.now
            try sim.writeOperation()
            sim.run(until: start + .seconds(300)) { $0.operationConverged }
            let took = sim.now - start
            let converged = sim.operationConverged
            // Acknowledgements and summaries still in flight count too.
            sim.run(until: sim.now + .milliseconds(50))
            let members = sim.traffic.dropFirst()
            let totals = members.map { $0.bytesSent + $0.bytesReceived }.sorted()
            return (
                converged ? Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18 : nil,
                sim.traffic[0].bytesSent, totals[totals.count / 2], totals.last ?? 0,
                members.map { $0.redundant + 1 }.sorted()[members.count / 2], sim.wholeLogsQueued
            )
        }
        let flood = try spread(summaries: false)
        let bounded = try spread(summaries: true)
        let setup =
            "an add by the owner in a room of \(size) (RoomSyncSimulation: real RoomDistribution and "
            + "RoomOperationFanOut, every two members with a session, 2 ms per record, mock clock); bytes include "
            + "the actor's card after each operation record, not the room's whole log queued for the newcomer "
            + "(\(bounded.logs)× with summaries, by the adder only; \(flood.logs)× flooded, by every member)"
        return [
            BenchRow(
                id: "14f", measure: "Room of \(size): membership operation → every member holds it", unit: "s",
                parley: bounded.seconds, reference: flood.seconds,
                referenceName: "every member to every member (older nodes)", goal: .none,
                note: "\(setup); with summaries the last members get it by relay and anti-entropy (15 s)"),
            BenchRow(
                id: "14g", measure: "Room of \(size): author's bytes for one membership operation", unit: "KiB",
                parley: Double(bounded.author) / 1024, reference: Double(flood.author) / 1024,
                referenceName: "every member to every member (older nodes)", goal: .none,
                note: "to \(RoomFanOut.directRecipients) members, not \(size - 1)"),
            BenchRow(
                id: "14h", measure: "Room of \(size): median member's bytes for one membership operation", unit: "KiB",
                parley: Double(bounded.median) / 1024, reference: Double(flood.median) / 1024,
                referenceName: "every member to every member (older nodes)", goal: .none,
                note:
                    "sent + received; the median member received it \(bounded.copies)× (\(flood.copies)× flooded); "
                    + "busiest \(bounded.busiest / 1024) KiB (\(flood.busiest / 1024) KiB flooded)")
        ]
    }

    private func fmtSeconds(_ d: Duration) -> String {
        let s = Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
        return String(format: "%.1f s", s)
    }

    /// Microseconds for an Ed25519 signature of a room message (if `sign`) and `seals`
    /// ChaCha20-Poly1305 seals of `bytes`, median of 21 runs.
    private func cpuMicros(sign: Bool, seals: Int, bytes: Int) throws -> Double {
        let identity = IdentityKeyPair.generate()
        var cipher = CipherState(key: SecretBytes.random(32))
        let body = String(repeating: "x", count: 100)
        let plaintext = [UInt8](repeating: 7, count: bytes)
        var samples: [Double] = []
        for _ in 0..<21 {
            let t0 = DispatchTime.now().uptimeNanoseconds
            if sign {
                _ = try SignedRoomMessage.sign(
                    roomID: RoomID.random(), roomSequence: 1, id: MessageID.random(), createdAt: 1,
                    anchor: [RoomOperationHash(exactly: [UInt8](repeating: 1, count: 32))], body: body, by: identity)
            }
            for _ in 0..<seals { _ = try cipher.encrypt(ad: [], plaintext: plaintext) }
            samples.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e3)
        }
        return samples.sorted()[samples.count / 2]
    }
}
