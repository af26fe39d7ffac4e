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

    /// Issue 29 (M3): a known peer's advertisement can be replayed at any address, so the
    /// per-host rate applies whoever an advertisement claims to be, except at a host where a
    /// session proved that very peer (there a replay only makes us dial the peer itself).
    func testAKnownPeersAdvertisementIsRateLimitedExceptWhereItsSessionCameFrom() {
        var p = DialPlanner(
            backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)),
            dialRate: DialRateLimit(burst: 1, interval: .seconds(30)))
        let bob = identity(5)
        let hint = Fingerprint(bob).compact
        func connects(_ actions: [DialPlanner.Action]) -> Int {
            actions.filter { if case .connect = $0 { true } else { false } }.count
        }
        var dials = 0
        for n in 0..<5 {
            dials += connects(
                p.addDiscovered(
                    advert(n), candidates: address("10.0.0.66"), fingerprintHint: hint, known: true,
                    sessions: offline, now: clock.now))
        }
        XCTAssertEqual(dials, 1, "claims of a known peer at a victim's address: the burst, no more")
        // bob's sessions came from 10.0.0.5 (a remembered target, proven): its adverts there
        // are dialled at once, however many.
        _ = p.remember(
            bob, addresses: address("10.0.0.5"),
            sessions: DialPlanner.SessionView(isConnected: { _ in true }, online: { _ in nil }))
        dials = 0
        for n in 10..<15 {
            dials += connects(
                p.addDiscovered(
                    advert(n), candidates: address("10.0.0.5"), fingerprintHint: hint, known: true,
                    sessions: offline, now: clock.now))
        }
        XCTAssertEqual(dials, 5)
        // A host only gossiped for bob (a signed claim, unproven) is not proven.
        _ = p.remember(
            bob, addresses: address("10.0.0.77"),
            sessions: DialPlanner.SessionView(isConnected: { _ in true }, online: { _ in nil }), gossiped: true,
            now: clock.now)
        dials = 0
        for n in 20..<23 {
            dials += connects(
                p.addDiscovered(
                    advert(n), candidates: address("10.0.0.77"), fingerprintHint: hint, known: true,
                    sessions: offline, now: clock.now))
        }
        XCTAssertEqual(dials, 1)
    }

    /// A presence token first seen under one instance and then under another at other hosts
    /// is a copy: suspicious, never known (so never kept over unknown ones), still bounded.
    func testAPresenceTokenSeenAtASecondAddressIsSuspicious() {
        var sightings = PresenceSightings(maxTokens: 2)
        XCTAssertFalse(sightings.observe(token: [1], instance: "mdns:bob", hosts: ["10.0.0.5"]))
        XCTAssertFalse(sightings.observe(token: [1], instance: "mdns:bob", hosts: ["10.0.0.9"]), "bob moved")
        XCTAssertTrue(sightings.observe(token: [1], instance: "mdns:copy", hosts: ["10.0.0.66"]))
        XCTAssertFalse(
            sightings.observe(token: [1], instance: "mdns:bob #2", hosts: ["10.0.0.5"]),
            "renamed on a conflict, same host")
        XCTAssertTrue(sightings.observe(token: [1], instance: "mdns:copy", hosts: ["10.0.0.66"]), "the copy stays one")
        _ = sightings.observe(token: [2], instance: "mdns:a", hosts: ["10.0.0.2"])
        _ = sightings.observe(token: [3], instance: "mdns:b", hosts: ["10.0.0.3"])
        XCTAssertEqual(sightings.count, 2, "bounded")
        sightings.forget(instance: "mdns:b")
        XCTAssertEqual(sightings.count, 1)

        var p = DialPlanner(
            backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)), maxDiscovered: 2)
        _ = p.addDiscovered(
            advert(0), candidates: address("10.0.0.5"), fingerprintHint: "BOB", known: true, presenceToken: [9],
            sessions: offline, now: clock.now)
        _ = p.addDiscovered(
            advert(1), candidates: address("10.0.0.66"), fingerprintHint: "BOB", known: true, presenceToken: [9],
            sessions: offline, now: clock.now)
        XCTAssertEqual(p.targets[advert(0)]?.known, true)
        XCTAssertEqual(p.targets[advert(1)]?.suspicious, true)
        XCTAssertEqual(p.targets[advert(1)]?.known, false)
        // The table is full: a known peer's advertisement evicts the suspicious copy.
        let actions = p.addDiscovered(
            advert(2), candidates: address("10.0.0.7"), fingerprintHint: "CAROL", known: true, sessions: offline)
        XCTAssertEqual(actions.first, .cancelRedial(advert(1)))
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
