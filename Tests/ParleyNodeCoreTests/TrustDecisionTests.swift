import ParleyCore
import XCTest

@testable import ParleyNodeCore

final class TrustDecisionTests: XCTestCase {
    let bobKey = IdentityKeyPair.generate()
    let noise = NoiseStaticKeyPair.generate()

    func card(_ key: IdentityKeyPair, name: String = "bob", sequence: UInt64 = 1, issuedAt: UInt64 = 1_700_000_000)
        -> Card
    {
        try! Card.issue(
            identity: key, noiseKey: noise.publicKey, displayName: name, hostName: "host",
            issuedAt: issuedAt, sequence: sequence)
    }

    func known(_ c: Card, standing: KnownPeer.Standing = .trusted) -> KnownPeer {
        KnownPeer(
            identity: c.identityKey, displayName: c.displayName, cardSequence: c.sequence, card: c.encoded(),
            standing: standing)
    }

    func testTheSameCardKeepsTheSession() {
        let c = card(bobKey)
        XCTAssertEqual(TrustDecision.known(known(c), card: c), .keep)
        XCTAssertEqual(
            TrustDecision.known(known(c, standing: .awaitingApproval), card: c), .refuse(.awaitingApproval),
            "held until a person accepts it")
    }

    func testANewerCardIsPinned() {
        let old = card(bobKey)
        XCTAssertEqual(
            TrustDecision.known(known(old), card: card(bobKey, name: "robert", sequence: 2)), .keepAndUpdateCard)
    }

    func testStaleAndConflictingCardsAreRefused() {
        let pinned = card(bobKey, sequence: 5)
        XCTAssertEqual(
            TrustDecision.known(known(pinned), card: card(bobKey, sequence: 4)),
            .refuse(.staleCard(presented: 4, pinned: 5)))
        XCTAssertEqual(
            TrustDecision.known(known(pinned), card: card(bobKey, name: "eve", sequence: 5)),
            .refuse(.conflictingCard))
    }

    func testBlockedAndReplacedIdentitiesAreRefusedWhateverTheyPresent() {
        let c = card(bobKey)
        XCTAssertEqual(
            TrustDecision.known(known(c, standing: .blocked), card: card(bobKey, sequence: 9)), .refuse(.blocked))
        XCTAssertEqual(TrustDecision.known(known(c, standing: .replaced), card: c), .refuse(.replaced))
    }

    func testANewIdentityIsPinnedOnFirstUseOrHeldByPolicy() {
        let c = card(IdentityKeyPair.generate(), name: "dave")
        XCTAssertEqual(TrustDecision.newIdentity(card: c, policy: .accept), .pinNewPeer)
        XCTAssertEqual(TrustDecision.newIdentity(card: c, policy: .hold), .holdNewPeer)
    }

    /// A peer is its key: a new key under a pinned peer's name is a new peer, never a change
    /// of the pinned one (the name only earns a clash marker, see NameClashesTests).
    func testANewIdentityUnderAKnownNameIsJustANewPeer() {
        let impostor = card(IdentityKeyPair.generate(), name: "bob")
        XCTAssertEqual(TrustDecision.newIdentity(card: impostor, policy: .accept), .pinNewPeer)
        // And the real bob's own card still keeps his session.
        let real = card(bobKey)
        XCTAssertEqual(TrustDecision.known(known(real), card: real), .keep)
    }

    func testCardUpdates() {
        let now: UInt64 = 1_700_000_100
        let pinned = known(card(bobKey, sequence: 3))
        XCTAssertEqual(
            TrustDecision.cardUpdate(
                card(bobKey, sequence: 4), sessionIdentity: bobKey.publicKey, pinned: pinned, nowSeconds: now), .pin)
        XCTAssertEqual(
            TrustDecision.cardUpdate(
                card(bobKey, sequence: 3), sessionIdentity: bobKey.publicKey, pinned: pinned, nowSeconds: now), .ignore)
        XCTAssertEqual(
            TrustDecision.cardUpdate(
                card(bobKey, sequence: 2), sessionIdentity: bobKey.publicKey, pinned: pinned, nowSeconds: now), .ignore)
        let other = card(IdentityKeyPair.generate(), sequence: 9)
        XCTAssertEqual(
            TrustDecision.cardUpdate(other, sessionIdentity: bobKey.publicKey, pinned: pinned, nowSeconds: now),
            .otherIdentity)
    }

    /// Issue 16 item 3: an expired update is not pinned, however high its sequence.
    func testAnExpiredCardUpdateIsNotPinned() throws {
        let pinned = known(card(bobKey, sequence: 3))
        let expired = try Card.issue(
            identity: bobKey, noiseKey: noise.publicKey, displayName: "bob", hostName: "host",
            issuedAt: 1_700_000_000, sequence: 9, expiresAt: 1_700_000_050)
        XCTAssertEqual(
            TrustDecision.cardUpdate(
                expired, sessionIdentity: bobKey.publicKey, pinned: pinned,
                nowSeconds: 1_700_000_050), .expired)
        XCTAssertEqual(
            TrustDecision.cardUpdate(
                expired, sessionIdentity: bobKey.publicKey, pinned: pinned,
                nowSeconds: 1_700_000_049), .pin, "a second before it expires")
    }
}

final class AdmissionControlTests: XCTestCase {
    let clock = ManualNodeClock()

    func testBurstThenRateLimitPerSource() {
        var a = AdmissionControl()
        var accepted = 0
        for _ in 0..<100 {
            if a.admit(source: "10.0.0.1", now: clock.now) == .accept {
                accepted += 1
                a.handshakeEnded(source: "10.0.0.1")
            }
        }
        XCTAssertEqual(accepted, Int(NodeLimits.connectionBurstPerSource))
        XCTAssertEqual(a.admit(source: "10.0.0.1", now: clock.now), .refuseRate)
        XCTAssertEqual(a.admit(source: "10.0.0.2", now: clock.now), .accept, "other sources are unaffected")
        clock.advance(.milliseconds(200))  // 5/s: one token back
        XCTAssertEqual(a.admit(source: "10.0.0.1", now: clock.now), .accept)
        XCTAssertEqual(a.admit(source: "10.0.0.1", now: clock.now), .refuseRate)
    }

    func testHandshakesInProgressAreCappedPerSourceAndInTotal() {
        var a = AdmissionControl()
        for _ in 0..<NodeLimits.maxUnauthenticatedPerSource {
            XCTAssertEqual(a.admit(source: "10.0.0.1", now: clock.now), .accept)
        }
        XCTAssertEqual(a.admit(source: "10.0.0.1", now: clock.now), .refuseTooManyFromSource)
        a.handshakeEnded(source: "10.0.0.1")
        XCTAssertEqual(a.admit(source: "10.0.0.1", now: clock.now), .accept)
        var n = a.handshakingTotal
        var source = 0
        while n < NodeLimits.maxUnauthenticatedConnections {
            source += 1
            if a.admit(source: "10.1.\(source / 250).\(source % 250)", now: clock.now) == .accept { n += 1 }
        }
        XCTAssertEqual(a.admit(source: "10.9.9.9", now: clock.now), .refuseTooManyHandshakes)
        a.handshakeEnded(source: "unknown")  // never admitted: changes nothing
        XCTAssertEqual(a.handshakingTotal, NodeLimits.maxUnauthenticatedConnections)
    }

    func testTheSourceTableIsBounded() {
        var a = AdmissionControl()
        for i in 0..<(NodeLimits.trackedSources + 500) {
            if a.admit(source: "s\(i)", now: clock.now) == .accept { a.handshakeEnded(source: "s\(i)") }
        }
        XCTAssertEqual(a.trackedSourceCount, NodeLimits.trackedSources)
    }
}
