import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// What becomes of a finished handshake, step by step: the order of the checks is the
/// defence (nothing is pinned for a connection refused before trust; a duplicate starts
/// nothing).
final class EstablishedSessionDecisionTests: XCTestCase {
    typealias Decision = EstablishedSessionDecision

    private func facts(
        stopping: Bool = false, wouldAdmit: Bool = true, advertised: AdvertisedIdentityCheck = .noClaim,
        dialled: Bool = false
    ) -> Decision.Facts {
        Decision.Facts(stopping: stopping, wouldAdmit: wouldAdmit, advertised: advertised, dialled: dialled)
    }

    /// The whole way for an inbound connection: trust, then the table, then the session.
    func testAnAdmittedConnectionIsJudgedThenEstablishedThenStarted() {
        var d = Decision()
        XCTAssertEqual(d.handshakeFinished(facts()), [.judgeTrust])
        XCTAssertEqual(d.trustJudged(refusal: nil), [.establish])
        XCTAssertEqual(d.tableDecided(kept: true), [.startSession])
    }

    /// Over the session caps: refused before trust is asked (a flood of fresh keys from
    /// one /24 pins none of them), whatever else holds.
    func testTheSessionLimitRefusesBeforeTrust() {
        for advertised in [AdvertisedIdentityCheck.noClaim, .matches, .spoofed(claimed: "x")] {
            for dialled in [false, true] {
                var d = Decision()
                let actions = d.handshakeFinished(facts(wouldAdmit: false, advertised: advertised, dialled: dialled))
                XCTAssertEqual(actions, [.refuse(.sessionLimit)])
                XCTAssertEqual(d.trustJudged(refusal: nil), [], "no trust step after a refusal")
                XCTAssertEqual(d.tableDecided(kept: true), [])
            }
        }
    }

    /// A stopping node takes nothing, not even to count it against a cap.
    func testAStoppingNodeRefusesFirst() {
        var d = Decision()
        XCTAssertEqual(d.handshakeFinished(facts(stopping: true, wouldAdmit: false)), [.refuse(.stopping)])
    }

    /// A spoofed advertisement: closed, the planner told (when dialled), trust never asked,
    /// and the planner is not told the lying target proved anything.
    func testASpoofedAdvertisementIsRefusedAndFlaggedWithoutTrust() {
        var d = Decision()
        XCTAssertEqual(
            d.handshakeFinished(facts(advertised: .spoofed(claimed: "abc"), dialled: true)),
            [.refuse(.spoofed(claimed: "abc")), .tellPlannerSpoofed])
        XCTAssertEqual(d.trustJudged(refusal: nil), [])
    }

    /// A dialled connection whose advertisement matched: the planner hears which key the
    /// address proved before trust is asked.
    func testADialledConnectionTellsThePlannerBeforeTrust() {
        var d = Decision()
        XCTAssertEqual(
            d.handshakeFinished(facts(advertised: .matches, dialled: true)), [.tellPlannerProvedIdentity, .judgeTrust])
    }

    /// Trust refuses: closed with its reason and text; the table is never asked.
    func testATrustRefusalClosesWithItsReason() {
        var d = Decision()
        _ = d.handshakeFinished(facts())
        XCTAssertEqual(
            d.trustJudged(refusal: (.notTrusted, "blocked")), [.refuse(.trust(.notTrusted, "blocked"))])
        XCTAssertEqual(d.tableDecided(kept: true), [])
    }

    /// The table closed the connection (a racing duplicate, or over a cap): nothing starts.
    func testAConnectionTheTableDidNotKeepStartsNothing() {
        var d = Decision()
        _ = d.handshakeFinished(facts())
        _ = d.trustJudged(refusal: nil)
        XCTAssertEqual(d.tableDecided(kept: false), [])
        XCTAssertEqual(d.tableDecided(kept: true), [], "one decision per connection")
    }

    /// Steps out of order do nothing.
    func testStepsOutOfOrderAreIgnored() {
        var d = Decision()
        XCTAssertEqual(d.trustJudged(refusal: nil), [])
        XCTAssertEqual(d.tableDecided(kept: true), [])
        XCTAssertEqual(d.handshakeFinished(facts()), [.judgeTrust])
        XCTAssertEqual(d.handshakeFinished(facts()), [], "the handshake finishes once")
    }

    /// Why a dialled connection ended without a session, for `connect --wait`.
    func testDialAttemptEndNamesThePeersRefusal() {
        XCTAssertTrue(
            DialAttemptEnd.describe(peerClose: .notTrusted, handshook: true, error: nil, address: "h:1")
                .contains("does not trust this node"))
        XCTAssertTrue(
            DialAttemptEnd.describe(peerClose: nil, handshook: false, error: "eof", address: "h:1")
                .hasPrefix("the handshake with h:1 failed: eof"))
        XCTAssertEqual(
            DialAttemptEnd.describe(peerClose: nil, handshook: true, error: nil, address: "h:1"),
            "the session with h:1 closed before it was kept")
        XCTAssertTrue(DialAttemptEnd.refusedByTrust(.keyChangePending))
        XCTAssertTrue(DialAttemptEnd.refusedByTrust(.notTrusted))
        XCTAssertFalse(DialAttemptEnd.refusedByTrust(.duplicate))
        XCTAssertFalse(DialAttemptEnd.refusedByTrust(nil))
    }
}
