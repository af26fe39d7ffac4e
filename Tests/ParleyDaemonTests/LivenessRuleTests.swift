import NIOCore
import XCTest
@testable import ParleyDaemon

/// docs/PROTOCOL.md "Liveness": one ping per 5 s of silence, dead after 15 s, and the
/// verdict depends only on the session's clocks.
final class LivenessRuleTests: XCTestCase {
    private let rule = LivenessRule(pingInterval: .seconds(5), deadAfter: .seconds(15))
    private let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000_000)

    private func at(_ ms: Int64) -> NIODeadline { t0 + .milliseconds(ms) }

    func testTrafficBothWaysNeedsNoPing() {
        XCTAssertEqual(rule.verdict(now: at(4_900), lastReceived: at(1_000), lastSent: at(1_000), lastPing: nil), .nothing)
    }

    func testFiveSecondsOfSilencePingsOnce() {
        XCTAssertEqual(rule.verdict(now: at(5_000), lastReceived: at(0), lastSent: at(4_000), lastPing: nil), .ping)
    }

    /// The keepalive tick runs every second; a silent peer must get one ping per interval,
    /// not one per tick (parleyd 1.0 re-pinged every second after the first).
    func testSilenceContinuesOnePingPerInterval() {
        let pingedAt = at(5_000)
        for tick in stride(from: Int64(6_000), through: 9_900, by: 1_000) {
            XCTAssertEqual(rule.verdict(now: at(tick), lastReceived: at(0), lastSent: pingedAt, lastPing: pingedAt), .nothing,
                           "tick at \(tick) ms")
        }
        XCTAssertEqual(rule.verdict(now: at(10_000), lastReceived: at(0), lastSent: pingedAt, lastPing: pingedAt), .ping)
    }

    func testSendingNothingForAnIntervalPings() {
        XCTAssertEqual(rule.verdict(now: at(5_000), lastReceived: at(4_000), lastSent: at(0), lastPing: nil), .ping)
    }

    func testFifteenSecondsOfSilenceIsDeath() {
        XCTAssertEqual(rule.verdict(now: at(15_000), lastReceived: at(0), lastSent: at(14_000), lastPing: at(14_000)), .nothing)
        XCTAssertEqual(rule.verdict(now: at(15_001), lastReceived: at(0), lastSent: at(14_000), lastPing: at(14_000)), .dead)
    }
}
