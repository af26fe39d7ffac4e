import ParleyNodeCore
import XCTest

/// Issue 16 item 2 (docs/PROTOCOL.md "Liveness"): one ping per interval while the peer is
/// silent, not one per tick; dead after `deadAfter` of silence.
final class KeepalivePingRateTests: XCTestCase {
    let clock = ManualNodeClock()
    let policy = KeepalivePolicy(pingInterval: .seconds(5), deadAfter: .seconds(15))

    /// Drives the policy the way the node's tick does (every `tickInterval`, remembering
    /// its pings) through 15 s of silence from the peer.
    func testSilentPeerGetsOnePingPerIntervalNotPerTick() {
        let lastReceived = clock.now
        var lastSent = clock.now
        var lastPing: MonotonicInstant?
        var pings: [Duration] = []
        while clock.now - lastReceived <= .seconds(15) {
            clock.advance(policy.tickInterval)
            switch policy.check(lastReceived: lastReceived, lastSent: lastSent, now: clock.now, lastPing: lastPing) {
            case .ping:
                pings.append(clock.now - lastReceived)
                lastPing = clock.now
                lastSent = clock.now
            case .dead:
                XCTAssertEqual(pings, [.seconds(5), .seconds(10), .seconds(15)])
                XCTAssertGreaterThan(clock.now - lastReceived, .seconds(15))
                return
            case .healthy:
                break
            }
        }
        clock.advance(policy.tickInterval)
        XCTAssertEqual(
            policy.check(lastReceived: lastReceived, lastSent: lastSent, now: clock.now, lastPing: lastPing), .dead)
        XCTAssertEqual(pings, [.seconds(5), .seconds(10), .seconds(15)])
    }

    func testARecentPingDoesNotSilenceTheQuietSenderRule() {
        let start = clock.now
        clock.advance(.seconds(5))
        // We pinged 4 s ago and sent nothing since, the peer talks: no ping yet.
        XCTAssertEqual(
            policy.check(
                lastReceived: clock.now, lastSent: start + .seconds(1), now: clock.now,
                lastPing: start + .seconds(1)), .healthy)
        clock.advance(.seconds(1))
        XCTAssertEqual(
            policy.check(
                lastReceived: clock.now, lastSent: start + .seconds(1), now: clock.now,
                lastPing: start + .seconds(1)), .ping)
    }
}
