import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class RefusalRecordLimitTests: XCTestCase {
    private let mallory = identity(0x11)
    private let alice = identity(0x22)

    /// A flood of refusals at one instant: the burst is stored, the rest dropped, and the
    /// driver is told to log only at the first drop.
    func testAFloodStoresOnlyTheBurstAndLogsOnce() {
        let clock = ManualNodeClock()
        var limit = RefusalRecordLimit()
        let decisions = (0..<1_000).map { _ in limit.refused(from: mallory, now: clock.monotonicNow()) }
        XCTAssertEqual(decisions.filter { $0 == .record }.count, RefusalRecordLimit.defaultBurst)
        XCTAssertEqual(Array(decisions.prefix(RefusalRecordLimit.defaultBurst)), Array(repeating: .record, count: 8))
        XCTAssertEqual(decisions[RefusalRecordLimit.defaultBurst], .dropFirst)
        XCTAssertEqual(decisions.filter { $0 == .dropFirst }.count, 1)
    }

    /// A sustained flood over ten minutes stores the burst plus one per interval, never
    /// one per offer.
    func testASustainedFloodStoresOnePerInterval() {
        let clock = ManualNodeClock()
        var limit = RefusalRecordLimit()
        var stored = 0
        // 100 offers a second for 600 s.
        for _ in 0..<60_000 {
            if limit.refused(from: mallory, now: clock.monotonicNow()) == .record { stored += 1 }
            clock.advance(.milliseconds(10))
        }
        let perInterval = 600 / 6
        XCTAssertGreaterThanOrEqual(stored, RefusalRecordLimit.defaultBurst + perInterval - 1)
        XCTAssertLessThanOrEqual(stored, RefusalRecordLimit.defaultBurst + perInterval + 1)
    }

    /// After a pause the burst is back, and a new run of drops is logged again.
    func testAPauseRefillsTheBurstAndRearmsTheLogLine() {
        let clock = ManualNodeClock()
        var limit = RefusalRecordLimit(burst: 2, interval: .seconds(6))
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record)
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record)
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .dropFirst)
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .drop)
        clock.advance(.seconds(5))
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .drop, "not yet a whole token")
        clock.advance(.seconds(1))
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record)
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .dropFirst, "a new run is logged")
        clock.advance(.seconds(3_600))
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record)
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record, "refilled to the burst only")
        XCTAssertNotEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record)
    }

    /// One sender's flood costs another sender nothing.
    func testSendersHaveTheirOwnBuckets() {
        let clock = ManualNodeClock()
        var limit = RefusalRecordLimit(burst: 3, interval: .seconds(6))
        for _ in 0..<100 { _ = limit.refused(from: mallory, now: clock.monotonicNow()) }
        for _ in 0..<3 { XCTAssertEqual(limit.refused(from: alice, now: clock.monotonicNow()), .record) }
        XCTAssertEqual(limit.refused(from: alice, now: clock.monotonicNow()), .dropFirst)
    }

    /// Many senders: the table stays bounded, the least recently seen is forgotten.
    func testTheSenderTableIsBounded() {
        let clock = ManualNodeClock()
        var limit = RefusalRecordLimit(burst: 1, interval: .seconds(6), maxSenders: 4)
        for b in UInt8(1)...UInt8(50) { _ = limit.refused(from: identity(b), now: clock.monotonicNow()) }
        XCTAssertEqual(limit.trackedSenders, 4)
        // The most recent are still remembered (their bucket is empty)...
        XCTAssertEqual(limit.refused(from: identity(50), now: clock.monotonicNow()), .dropFirst)
        // ...the oldest forgotten: a fresh burst.
        XCTAssertEqual(limit.refused(from: identity(1), now: clock.monotonicNow()), .record)
        XCTAssertEqual(limit.trackedSenders, 4)
    }

    /// A clock that goes backwards (it must not, but) neither refills nor traps.
    func testAnEarlierInstantAddsNoTokens() {
        let clock = ManualNodeClock()
        clock.advance(.seconds(100))
        var limit = RefusalRecordLimit(burst: 1, interval: .seconds(6))
        XCTAssertEqual(limit.refused(from: mallory, now: clock.monotonicNow()), .record)
        XCTAssertEqual(limit.refused(from: mallory, now: .zero), .dropFirst)
    }
}
