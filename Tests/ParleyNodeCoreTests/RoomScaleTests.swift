import ParleyCore
import ParleyNodeCore
import RoomSyncSimulation
import SeededRandom
import XCTest

/// Rooms as big as an office (issue 30): in-process members running the real sync rules
/// (`RoomSyncSimulation`), a seeded generator and a mock clock.
final class RoomScaleTests: XCTestCase {
    /// 64 members, ten minutes of churn (members going offline and coming back at random)
    /// while random authors write; then everyone comes back: every member holds every message
    /// within a bounded time, and no member received any message more than a bounded number
    /// of times.
    func testSixtyFourMembersConvergeAfterRandomChurn() throws {
        var sim = try RoomSyncSimulation(members: 64, seed: 64)
        var rng = SplitMix64(seed: 6_400)
        sim.setOnline(Array(0..<64))
        var written = 0
        for _ in 0..<600 {  // bounded: ten simulated minutes in steps of one second
            let roll = Int.random(in: 0..<10, using: &rng)
            let who = Int.random(in: 0..<64, using: &rng)
            if roll < 2 {
                sim.setOffline([who])
            } else if roll < 5 {
                sim.setOnline([who])
            } else if roll < 6, sim.online[who] {
                sim.write(author: who)
                written += 1
            }
            sim.run(until: sim.now + .seconds(1))
        }
        XCTAssertGreaterThan(written, 30)
        XCTAssertLessThan(sim.online.filter { $0 }.count, 64, "some members were offline at the end of the churn")
        sim.setOnline(Array(0..<64))
        let back = sim.now
        sim.run(until: back + .seconds(120)) { $0.converged }
        XCTAssertTrue(sim.converged, "every member holds every message")
        XCTAssertLessThanOrEqual(sim.now - back, .seconds(5), "the summaries at session start fill the gaps")
        // Each message reaches a member from its relays (about `relayPeers`), the author and
        // a catch-up (at most `startSummaries` sessions push it): a constant per message.
        let perMessage = 2 * (RoomFanOut.relayPeers + RoomSyncLimits.startSummaries + 1)
        for (i, t) in sim.traffic.enumerated() {
            XCTAssertLessThan(t.redundant, written * perMessage, "member \(i) got too many copies it held")
        }
    }

    /// One message in rooms of 100 and 500 members, all online: everyone holds it within a
    /// few relay rounds, the author sends a bounded number of copies, and what the median
    /// member receives and sends does not grow with the room.
    func testPerMemberWorkForOneMessageDoesNotGrowWithTheRoom() throws {
        var medians: [Int: (received: Int, sent: Int)] = [:]
        for size in [100, 500] {
            var sim = try RoomSyncSimulation(members: size, seed: UInt64(size))
            sim.setOnline(Array(0..<size))
            sim.run(until: sim.now + .seconds(1))
            sim.resetTraffic()
            let start = sim.now
            sim.write(author: 0)
            sim.run(until: start + .seconds(120)) { $0.converged }
            XCTAssertTrue(sim.converged, "room of \(size)")
            XCTAssertLessThanOrEqual(sim.now - start, .seconds(40), "room of \(size): a few relay rounds")
            // Let pending relays and summaries finish, then count.
            sim.run(until: sim.now + .seconds(10))
            let author = sim.traffic[0]
            let messageRecords = sim.signedMessageBytes + RoomSyncSimulation.recordOverhead
            XCTAssertLessThanOrEqual(
                author.bytesSent, (RoomFanOut.directRecipients + RoomFanOut.relayPeers + 2) * messageRecords * 2,
                "room of \(size): the author sends a bounded number of copies")
            let others = sim.traffic.dropFirst()
            let received = others.map(\.bytesReceived).sorted()[others.count / 2]
            let sent = others.map(\.bytesSent).sorted()[others.count / 2]
            medians[size] = (received, sent)
            XCTAssertLessThanOrEqual(
                received, (RoomFanOut.relayPeers + 2) * messageRecords * 2,
                "room of \(size): the median member receives a bounded number of copies")
        }
        let small = try XCTUnwrap(medians[100])
        let large = try XCTUnwrap(medians[500])
        XCTAssertLessThanOrEqual(Double(large.received), Double(small.received) * 1.5, "\(medians)")
        XCTAssertLessThanOrEqual(Double(large.sent), Double(small.sent) * 1.5, "\(medians)")
    }
}
