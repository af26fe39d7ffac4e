import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class RedialBackoffTests: XCTestCase {
    let backoff = RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30))

    func testDoublesFromInitialWithJitterBetweenHalfAndWhole() {
        for failures in 0...6 {
            let full = Duration.milliseconds(500 * (1 << failures))
            let capped = min(full, .seconds(30))
            XCTAssertEqual(backoff.delay(afterFailures: failures, random: FixedRandom(draw: .lowest)), capped / 2)
            let highest = backoff.delay(afterFailures: failures, random: FixedRandom(draw: .highest))
            XCTAssertLessThan(highest, capped)
            XCTAssertGreaterThanOrEqual(highest, capped - .milliseconds(1))
        }
    }

    func testNeverPassesTheMaximumEvenAfterManyFailures() {
        for failures in [7, 10, 11, 64, Int.max] {
            let d = backoff.delay(afterFailures: failures, random: FixedRandom(draw: .highest))
            XCTAssertLessThan(d, .seconds(30))
            XCTAssertGreaterThanOrEqual(d, .seconds(15))
        }
        XCTAssertEqual(backoff.delay(afterFailures: -3, random: FixedRandom(draw: .lowest)), .milliseconds(250))
    }

    func testRealRandomnessStaysInBounds() {
        for _ in 0..<200 {
            let d = backoff.delay(afterFailures: 2, random: SodiumRandom())
            XCTAssertGreaterThanOrEqual(d, .seconds(1))
            XCTAssertLessThan(d, .seconds(2))
        }
    }
}

final class DialPlannerTests: XCTestCase {
    let random = FixedRandom(draw: .lowest)
    let a1 = DialAddress(host: "10.0.0.1", port: 7744)
    let a2 = DialAddress(host: "fe80::1", port: 7744)
    let bob = identity(5)
    var online: [IdentityPublicKey: String] = [:]

    var sessions: DialPlanner.SessionView {
        let snapshot = online
        return DialPlanner.SessionView(
            isConnected: { snapshot[$0] != nil },
            online: { hint in
                snapshot.first { Fingerprint($0.key).compact == hint }.map { (identity: $0.key, host: $0.value) }
            })
    }

    func planner() -> DialPlanner {
        DialPlanner(backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)))
    }

    func testConfiguredPeerIsDialledOnceUntilTheAttemptEnds() {
        var p = planner()
        let key = DialTargetKey(address: a1)
        XCTAssertEqual(p.addConfigured(a1, sessions: sessions), [.connect(key, a1, expectedFingerprint: nil)])
        XCTAssertEqual(p.addConfigured(a1, sessions: sessions), [], "already connecting")
        XCTAssertEqual(p.dial(key, sessions: sessions), [])
    }

    func testFailuresBackOffAndRotateCandidates() {
        var p = planner()
        let key = DialTargetKey(mdnsInstance: "bob")
        XCTAssertEqual(
            p.addDiscovered(key, candidates: [a1, a2], fingerprintHint: nil, sessions: sessions),
            [.connect(key, a1, expectedFingerprint: nil)])
        XCTAssertEqual(p.attemptFailed(key, random: random), [.armRedial(key, after: .milliseconds(500))])
        XCTAssertEqual(p.attemptFailed(key, random: random), [], "a failure report without an attempt is ignored")
        XCTAssertEqual(p.redialDue(key, sessions: sessions), [.connect(key, a2, expectedFingerprint: nil)])
        XCTAssertEqual(p.attemptFailed(key, random: random), [.armRedial(key, after: .seconds(1))])
        XCTAssertEqual(p.redialDue(key, sessions: sessions), [.connect(key, a1, expectedFingerprint: nil)])
    }

    func testSuccessResetsTheBackoffAndSessionDownRedials() {
        var p = planner()
        let key = DialTargetKey(address: a1)
        _ = p.addConfigured(a1, sessions: sessions)
        _ = p.attemptFailed(key, random: random)
        _ = p.redialDue(key, sessions: sessions)
        p.sessionUp(key, identity: bob)
        XCTAssertEqual(p.targets[key]?.failures, 0)
        XCTAssertEqual(p.targets(of: bob), [key])
        XCTAssertEqual(
            p.sessionDown(bob, random: random), [.armRedial(key, after: .milliseconds(250))],
            "no failures: 0.5 s, jittered")
        XCTAssertEqual(p.sessionDown(bob, random: random), [], "one timer per target")
    }

    func testATargetWhosePeerIsOnlineIsNotDialled() {
        var p = planner()
        let key = DialTargetKey(address: a1)
        _ = p.addConfigured(a1, sessions: sessions)
        p.sessionUp(key, identity: bob)
        _ = p.sessionDown(bob, random: random)
        online[bob] = "10.0.0.9"  // bob dialled us meanwhile
        XCTAssertEqual(p.redialDue(key, sessions: sessions), [])
    }

    func testAnAdvertisementOfAnIdentityAlreadyOnlineAtAListedAddressIsNotDialled() {
        var p = planner()
        online[bob] = "10.0.0.1"
        let key = DialTargetKey(mdnsInstance: "bob")
        let hint = Fingerprint(bob).compact
        XCTAssertEqual(p.addDiscovered(key, candidates: [a1], fingerprintHint: hint, sessions: sessions), [])
        XCTAssertEqual(p.targets[key]?.identity, bob)
        // The same claim from an address bob's session does not come from is not dialled
        // either while bob's session is up (issue 29, M3: a replayed advertisement made every
        // node dial the replayer's victim); once it ends, the handshake will tell.
        let other = DialTargetKey(mdnsInstance: "bob-elsewhere")
        let a3 = DialAddress(host: "10.0.0.66", port: 7744)
        XCTAssertEqual(p.addDiscovered(other, candidates: [a3], fingerprintHint: hint, sessions: sessions), [])
        online[bob] = nil
        XCTAssertEqual(
            p.redialDue(other, sessions: sessions), [.connect(other, a3, expectedFingerprint: hint)])
    }

    func testAReplayedAdvertisementOfAPeerInSessionIsNeverDialledWhateverItsAddress() {
        let clock = ManualNodeClock()
        var p = planner()
        online[bob] = "10.0.0.1"
        let hint = Fingerprint(bob).compact
        var dials = 0
        // 20 replays at 20 victim addresses, each re-announced every second for 40 s.
        for _ in 0..<40 {
            clock.advance(.seconds(1))
            for n in 0..<20 {
                let key = DialTargetKey(mdnsInstance: "replay\(n)")
                let actions =
                    p.addDiscovered(
                        key, candidates: [DialAddress(host: "10.0.1.\(n)", port: 7744)], fingerprintHint: hint,
                        known: true, presenceToken: [1, 2, 3], sessions: sessions, now: clock.now)
                    + p.redialDue(key, sessions: sessions, now: clock.now)
                dials += actions.filter { if case .connect = $0 { true } else { false } }.count
            }
        }
        XCTAssertEqual(dials, 0)
    }

    func testASpoofedAdvertisementIsNotDialledUntilItChanges() {
        var p = planner()
        let key = DialTargetKey(mdnsInstance: "bob")
        _ = p.addDiscovered(key, candidates: [a1], fingerprintHint: "CLAIMED", sessions: sessions)
        p.spoofDetected(key)
        _ = p.attemptFailed(key, random: random)
        XCTAssertEqual(p.redialDue(key, sessions: sessions), [], "spoofed: no knock")
        XCTAssertEqual(
            p.addDiscovered(key, candidates: [a1], fingerprintHint: "CLAIMED", sessions: sessions), [],
            "the same advertisement again is still a spoof")
        XCTAssertEqual(
            p.addDiscovered(key, candidates: [a2], fingerprintHint: "CLAIMED", sessions: sessions),
            [.connect(key, a2, expectedFingerprint: "CLAIMED")], "a changed advertisement is tried again")
    }

    func testRefusalByThePeersTrustBacksOffHarder() {
        var p = planner()
        let key = DialTargetKey(address: a1)
        _ = p.addConfigured(a1, sessions: sessions)
        _ = p.attemptFailed(key, random: random)  // failures 1
        XCTAssertEqual(p.refusedByPeerTrust(key, random: random), [], "a timer is already armed")
        _ = p.redialDue(key, sessions: sessions)
        XCTAssertEqual(
            p.attemptFailed(key, random: random), [.armRedial(key, after: .seconds(4))], "1 + 2 + 1 failures")
    }

    func testStopCancelsEveryTimerAndDialsNothingMore() {
        var p = planner()
        _ = p.addConfigured(a1, sessions: sessions)
        _ = p.addConfigured(a2, sessions: sessions)
        XCTAssertEqual(p.stop(), [.cancelRedial(DialTargetKey(address: a1)), .cancelRedial(DialTargetKey(address: a2))])
        XCTAssertEqual(p.addConfigured(a1, sessions: sessions), [])
    }

    func testReloadDropsRemovedConfiguredPeersOnly() {
        var p = planner()
        _ = p.addConfigured(a1, sessions: sessions)
        let mdns = DialTargetKey(mdnsInstance: "carol")
        _ = p.addDiscovered(mdns, candidates: [a2], fingerprintHint: nil, sessions: sessions)
        let a3 = DialAddress(host: "10.0.0.3", port: 1)
        let actions = p.setConfigured([a3], sessions: sessions)
        XCTAssertEqual(
            actions,
            [
                .cancelRedial(DialTargetKey(address: a1)),
                .connect(DialTargetKey(address: a3), a3, expectedFingerprint: nil)
            ])
        XCTAssertNotNil(p.targets[mdns])
        XCTAssertNil(p.targets[DialTargetKey(address: a1)])
    }

    func testAcceptedKeyChangeRedirectsTargetsAndDialsAtOnce() {
        var p = planner()
        let key = DialTargetKey(address: a1)
        _ = p.addConfigured(a1, sessions: sessions)
        p.provedIdentity(key, identity: bob, random: random)
        _ = p.attemptFailed(key, random: random)
        let newBob = identity(6)
        XCTAssertEqual(
            p.redirect(from: bob, to: newBob, sessions: sessions),
            [.cancelRedial(key), .connect(key, a1, expectedFingerprint: nil)])
        XCTAssertEqual(p.targets[key]?.identity, newBob)
    }

    func testAddressesPrintLikeHostPort() {
        XCTAssertEqual(a1.description, "10.0.0.1:7744")
        XCTAssertEqual(a2.description, "[fe80::1]:7744")
        XCTAssertEqual(DialTargetKey(mdnsInstance: "x").rawValue, "mdns:x")
    }
}

final class DialPlannerRememberedPeerTests: XCTestCase {
    let random = FixedRandom(draw: .lowest)
    let bob = identity(5)
    let carol = identity(6)
    var online: [IdentityPublicKey: String] = [:]

    var sessions: DialPlanner.SessionView {
        let snapshot = online
        return DialPlanner.SessionView(isConnected: { snapshot[$0] != nil }, online: { _ in nil })
    }

    func planner() -> DialPlanner {
        DialPlanner(backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30)))
    }

    func address(_ n: Int, port: UInt16 = 7744) -> DialAddress { DialAddress(host: "10.0.0.\(n)", port: port) }

    func testARememberedPeerIsDialledAtStartAndRedialledWhenItsSessionEnds() {
        var p = planner()
        let key = DialTargetKey(rememberedPeer: bob)
        XCTAssertEqual(
            p.remember(bob, addresses: [address(1), address(2)], sessions: sessions),
            [.connect(key, address(1), expectedFingerprint: nil)], "after a restart: dialled at once")
        XCTAssertEqual(p.attemptFailed(key, random: random), [.armRedial(key, after: .milliseconds(500))])
        XCTAssertEqual(
            p.redialDue(key, sessions: sessions), [.connect(key, address(2), expectedFingerprint: nil)],
            "the next remembered address")
        p.sessionUp(key, identity: bob)
        XCTAssertEqual(p.targets(of: bob), [key])
        XCTAssertEqual(
            p.sessionDown(bob, random: random), [.armRedial(key, after: .milliseconds(250))],
            "bob restarted: we dial him again")
    }

    func testAPeerThatConnectedToUsTeachesItsAddressWithoutADial() {
        var p = planner()
        online[bob] = "10.0.0.9"
        XCTAssertEqual(
            p.remember(bob, addresses: [address(9)], sessions: sessions), [],
            "bob is connected (he dialled us): nothing to dial now")
        XCTAssertEqual(p.targets[DialTargetKey(rememberedPeer: bob)]?.candidates, [address(9)])
        online[bob] = nil
        XCTAssertEqual(p.sessionDown(bob, random: random).count, 1, "when his session ends, we redial him")
    }

    func testNewAddressesComeFirstAndTheListIsBounded() {
        var p = planner()
        online[bob] = "x"
        for n in 1...6 { _ = p.remember(bob, addresses: [address(n)], sessions: sessions) }
        _ = p.remember(bob, addresses: [address(5)], sessions: sessions)
        XCTAssertEqual(
            p.targets[DialTargetKey(rememberedPeer: bob)]?.candidates,
            [address(5), address(6), address(4), address(3)])
        XCTAssertEqual(p.remember(carol, addresses: [], sessions: sessions), [])
        XCTAssertNil(p.targets[DialTargetKey(rememberedPeer: carol)])
        // A configured target already dials carol at 10.0.0.7: remembering it adds nothing.
        let configured = DialTargetKey(address: address(7))
        _ = p.addConfigured(address(7), sessions: sessions)
        p.sessionUp(configured, identity: carol)
        XCTAssertEqual(p.remember(carol, addresses: [address(7)], sessions: sessions), [])
        XCTAssertNil(p.targets[DialTargetKey(rememberedPeer: carol)], "not dialled twice")
    }

    func testAnotherNodeAtAnOldAddressDoesNotTakeOverTheTarget() {
        var p = planner()
        let key = DialTargetKey(rememberedPeer: bob)
        _ = p.remember(bob, addresses: [address(1)], sessions: sessions)
        XCTAssertEqual(
            p.provedIdentity(key, identity: carol, random: random), [.armRedial(key, after: .milliseconds(500))],
            "carol answered at bob's old address: bob is looked for again later")
        p.sessionUp(key, identity: carol)
        XCTAssertEqual(p.targets[key]?.identity, bob)
        XCTAssertEqual(p.targets(of: carol), [])
    }
}
