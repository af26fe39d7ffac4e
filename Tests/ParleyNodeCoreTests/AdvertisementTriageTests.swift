import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// What an mDNS advertisement is to this node before the planner hears of it.
final class AdvertisementTriageTests: XCTestCase {
    let me = Fingerprint(identity(1)).compact

    private func judge(
        instance: String = "bob", fp: String? = nil, presence: AdvertisementTriage.PresenceMatch? = nil,
        version: String? = "1", addresses: Int = 1, asked: inout Int
    ) -> AdvertisementTriage.Verdict {
        AdvertisementTriage.judge(
            instance: instance, ownInstance: "me", fingerprintHint: fp, ownFingerprint: me,
            carriesPresence: presence != nil,
            presence: {
                asked += 1
                return presence ?? .nobody
            }, version: version, addressCount: addresses)
    }

    func testOurOwnAdvertisementIsSeenByInstanceOrToken() {
        var asked = 0
        XCTAssertEqual(judge(instance: "me", asked: &asked), .ownAdvertisement)
        XCTAssertEqual(judge(presence: .ours, asked: &asked), .ownAdvertisement)
        XCTAssertEqual(judge(fp: me, asked: &asked), .ignore(.ownFingerprint))
    }

    /// A token naming a contact becomes the fingerprint the handshake must prove; a `fp`
    /// in the record wins and the token is not even checked (no HMACs spent).
    func testATokenNamesTheFingerprintToProve() {
        var asked = 0
        let bob = identity(2)
        XCTAssertEqual(
            judge(presence: .contact(bob), asked: &asked), .dial(fingerprintHint: Fingerprint(bob).compact))
        XCTAssertEqual(asked, 1)
        XCTAssertEqual(judge(fp: "claimed", presence: .contact(bob), asked: &asked), .dial(fingerprintHint: "claimed"))
        XCTAssertEqual(asked, 1)
        XCTAssertEqual(judge(presence: .nobody, asked: &asked), .dial(fingerprintHint: nil))
    }

    func testAnotherVersionOrNoAddressIsIgnored() {
        var asked = 0
        XCTAssertEqual(judge(version: "2", asked: &asked), .ignore(.otherVersion("2")))
        XCTAssertEqual(judge(addresses: 0, asked: &asked), .ignore(.noAddress))
        XCTAssertEqual(judge(version: nil, asked: &asked), .dial(fingerprintHint: nil))
    }
}
