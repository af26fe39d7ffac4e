import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// Issue 15.4: advertisements cannot make the node keep or dial without bound.
final class DiscoveryLimitsTests: XCTestCase {
    let clock = ManualNodeClock()
    let random = FixedRandom(draw: .lowest)
    let offline = DialPlanner.SessionView(isConnected: { _ in false }, online: { _ in nil })

    private func advert(_ n: Int) -> DialTargetKey { DialTargetKey(mdnsInstance: "node\(n)") }
    private func address(_ host: String) -> [DialAddress] { [DialAddress(host: host, port: 7744)] }

    func testTheTableOfAdvertisedTargetsIsBoundedAndKnownPeersComeFirst() {
        var p = DialPlanner(
            backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)), maxDiscovered: 3)
        for n in 0..<3 {
            _ = p.addDiscovered(advert(n), candidates: address("10.0.0.\(n)"), fingerprintHint: nil, sessions: offline)
        }
        XCTAssertEqual(
            p.addDiscovered(advert(9), candidates: address("10.0.0.9"), fingerprintHint: nil, sessions: offline), [],
            "an unknown advertisement beyond the limit is ignored")
        XCTAssertNil(p.targets[advert(9)])
        let actions = p.addDiscovered(
            advert(7), candidates: address("10.0.0.7"), fingerprintHint: "KNOWN", known: true,
            sessions: offline)
        XCTAssertEqual(actions.first, .cancelRedial(advert(0)), "the oldest unknown one makes room for a known peer")
        XCTAssertNotNil(p.targets[advert(7)])
        XCTAssertEqual(p.discoveredCount, 3)
        // Configured peers are not advertisements: never counted, never evicted.
        _ = p.addConfigured(DialAddress(host: "10.1.1.1", port: 1), sessions: offline)
        XCTAssertEqual(p.discoveredCount, 3)
    }

    func testAnAddressAdvertisedByStrangersIsDialledAtTheRateLimitWhateverTheAdverts() {
        var p = DialPlanner(
            backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)),
            dialRate: DialRateLimit(burst: 3, interval: .seconds(30)))
        // 50 fake advertisements all naming the victim's address; every attempt fails (silent listener).
        var dials = 0
        for n in 0..<50 {
            for a in p.addDiscovered(
                advert(n), candidates: address("10.0.0.66"), fingerprintHint: nil, sessions: offline,
                now: clock.now)
            {
                if case .connect = a { dials += 1 }
            }
        }
        XCTAssertEqual(dials, 3, "the burst, whatever the number of adverts")
        // 40 s of redials, timers firing as armed.
        for _ in 0..<40 {
            clock.advance(.seconds(1))
            for n in 0..<50 {
                _ = p.attemptFailed(advert(n), random: random)
                for a in p.redialDue(advert(n), sessions: offline, now: clock.now) {
                    if case .connect = a { dials += 1 }
                }
            }
        }
        XCTAssertLessThanOrEqual(dials, 3 + 2, "then one per 30 s: at most 5 in 40 s (before: 15 from one advert)")
    }

    func testAKnownPeersAdvertisementIsNotRateLimited() {
        var p = DialPlanner(
            backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)),
            dialRate: DialRateLimit(burst: 1, interval: .seconds(30)))
        var dials = 0
        for n in 0..<5 {
            for a in p.addDiscovered(
                advert(n), candidates: address("10.0.0.5"), fingerprintHint: "K\(n)", known: true,
                sessions: offline, now: clock.now)
            {
                if case .connect = a { dials += 1 }
            }
        }
        XCTAssertEqual(dials, 5)
    }

    func testTheRateLimitRefillsAndItsHostTableIsBounded() {
        var r = DialRateLimit(burst: 2, interval: .seconds(10), maxHosts: 4)
        XCTAssertNil(r.take(host: "a", now: clock.now))
        XCTAssertNil(r.take(host: "a", now: clock.now))
        XCTAssertEqual(r.take(host: "a", now: clock.now), .seconds(10))
        clock.advance(.seconds(4))
        XCTAssertEqual(r.take(host: "a", now: clock.now), .seconds(6))
        clock.advance(.seconds(6))
        XCTAssertNil(r.take(host: "a", now: clock.now))
        for h in 0..<10 { _ = r.take(host: "h\(h)", now: clock.now) }
        XCTAssertEqual(r.trackedHosts, 4)
    }
}
