import ParleyCore
import ParleyNodeCore
import RoomSyncSimulation
import XCTest

/// Operation summaries (issue 30): in a room of members that compare the heads of their
/// operation graphs, a membership operation reaches every member while what it costs its
/// actor and each member does not grow with the room; without them (older nodes) every
/// member sends it to every other.
final class RoomOperationSpreadTests: XCTestCase {
    func spread(members: Int, summaries: Bool, offline: [Int] = []) throws -> RoomSyncSimulation {
        // Bounded: two simulated minutes at most.
        var sim = try RoomSyncSimulation(members: members, seed: 77)
        sim.operationSummaries = summaries
        sim.setOnline(Array(0..<members).filter { !offline.contains($0) })
        sim.run(until: sim.now + .seconds(1))
        sim.resetTraffic()
        try sim.writeOperation()
        sim.run(until: sim.now + .seconds(120)) {
            $0.operationFirstHeld.compactMap { $0 }.count == members - offline.count
        }
        sim.run(until: sim.now + .milliseconds(50))  // copies still in flight
        return sim
    }

    func testAnOperationReachesEveryMemberAndItsActorSendsItToAFew() throws {
        let sim = try spread(members: 120, summaries: true)
        XCTAssertTrue(sim.operationConverged, "every member holds it")
        let opRecord = sim.operationBytes + RoomSyncSimulation.cardBytes
        let authorOps = sim.traffic[0].bytesSent / opRecord
        XCTAssertLessThanOrEqual(authorOps, RoomFanOut.directRecipients + 4, "its actor sends it to a few, not 119")
        let copies = sim.traffic.dropFirst().map { $0.redundant + 1 }.sorted()
        XCTAssertLessThanOrEqual(copies[copies.count / 2], RoomFanOut.relayPeers + 2)
        XCTAssertEqual(sim.wholeLogsQueued, 1, "the newcomer's log from its adder only")

        let flood = try spread(members: 120, summaries: false)
        XCTAssertTrue(flood.operationConverged)
        XCTAssertGreaterThan(
            flood.traffic.dropFirst().map { $0.redundant + 1 }.sorted()[59], 100,
            "flooded: each member gets ~every copy")
    }

    /// A member offline while the operation spread gets it from whoever it meets first:
    /// the summaries exchanged at session start.
    func testAMemberThatWasAwayGetsItFromTheSummaries() throws {
        var sim = try spread(members: 40, summaries: true, offline: [7])
        XCTAssertNil(sim.operationFirstHeld[7])
        sim.setOnline([7])
        let back = sim.now
        sim.run(until: back + .seconds(60)) { $0.operationConverged }
        XCTAssertTrue(sim.operationConverged)
        XCTAssertLessThanOrEqual(sim.now - back, .seconds(1), "at session start, not at the next anti-entropy round")
    }
}
