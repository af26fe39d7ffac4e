import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// The decisions the peer directory and the session path take about pinned peers: which
/// peer a typed name means, which mark wins, who is a stranger, and the spoof check.
final class PeerDecisionsTests: XCTestCase {
    typealias Entry = PeerNameResolution.Entry

    private func entry(_ b: UInt8, _ name: String, nickname: String? = nil, replaced: Bool = false) -> Entry {
        Entry(identity: identity(b), displayName: name, nickname: nickname, replaced: replaced)
    }

    func testTheWholeKeyWinsOverAnyName() {
        // Carol calls herself by bob's key in hex: the key still finds bob.
        let bob = entry(1, "bob")
        let carol = entry(2, identity(1).hex)
        XCTAssertEqual(PeerNameResolution.resolve(identity(1).hex.uppercased(), in: [carol, bob]), .found(1))
    }

    func testANicknameHidesTheNameThePeerChose() {
        // The person named key 1 "bob"; key 2 also calls itself "bob": the nickname wins.
        let entries = [entry(1, "robert", nickname: "bob"), entry(2, "bob")]
        XCTAssertEqual(PeerNameResolution.resolve("bob", in: entries), .found(0))
        // A peer with a nickname is not found by its own chosen name at the exact step.
        let renamed = [entry(1, "bob", nickname: "work bob"), entry(2, "Bob")]
        XCTAssertEqual(PeerNameResolution.resolve("bob", in: renamed), .found(1), "case-insensitive label")
    }

    func testASharedNameIsAmbiguousAndNeverPicksOne() {
        let entries = [entry(1, "bob"), entry(2, "bob"), entry(3, "carol")]
        XCTAssertEqual(PeerNameResolution.resolve("bob", in: entries), .ambiguous([0, 1]))
        XCTAssertEqual(PeerNameResolution.resolve("BOB", in: entries), .ambiguous([0, 1]))
    }

    func testReplacedKeysAreNeverFound() {
        let entries = [entry(1, "bob", replaced: true), entry(2, "bob")]
        XCTAssertEqual(PeerNameResolution.resolve("bob", in: entries), .found(1))
        XCTAssertEqual(PeerNameResolution.resolve(identity(1).hex, in: entries), .notFound)
    }

    func testAFingerprintPrefixFindsAPeerOnlyWhenLongEnough() {
        let entries = [entry(1, "bob"), entry(2, "carol")]
        let printed = Fingerprint(identity(2)).compact
        XCTAssertEqual(
            PeerNameResolution.resolve(String(printed.prefix(Fingerprint.minimumPrefixLength)), in: entries), .found(1))
        XCTAssertEqual(PeerNameResolution.resolve(String(printed.prefix(2)), in: entries), .notFound)
        XCTAssertEqual(PeerNameResolution.resolve("dave", in: entries), .notFound)
    }

    /// A name never takes a fingerprint from its key: carol calls herself by bob's
    /// fingerprint (whole, as the hints print it, or its first groups), or the person's page
    /// nicknames her so; `parley trust accept FINGERPRINT` must not find carol alone.
    func testANameThatIsAnotherKeysFingerprintIsAmbiguousNeverThatName() {
        let bob = Fingerprint(identity(1))
        for typed in [bob.description, String(bob.description.prefix(9)), bob.compact.uppercased()] {
            let entries = [entry(1, "bob"), entry(2, typed)]
            XCTAssertEqual(PeerNameResolution.resolve(typed, in: entries), .ambiguous([0, 1]), typed)
            let nicknamed = [entry(1, "bob"), entry(2, "carol", nickname: typed)]
            XCTAssertEqual(PeerNameResolution.resolve(typed, in: nicknamed), .ambiguous([0, 1]), typed)
        }
        // Her own fingerprint as her name finds her.
        let carol = Fingerprint(identity(2)).description
        XCTAssertEqual(PeerNameResolution.resolve(carol, in: [entry(1, "bob"), entry(2, carol)]), .found(1))
    }

    func testABlockWinsOverAReplacementWhichWinsOverAHold() {
        typealias S = KnownPeer.Standing
        XCTAssertEqual(S(blocked: true, replaced: true, awaitingApproval: true), .blocked)
        XCTAssertEqual(S(blocked: false, replaced: true, awaitingApproval: true), .replaced)
        XCTAssertEqual(S(blocked: false, replaced: false, awaitingApproval: true), .awaitingApproval)
        XCTAssertEqual(S(blocked: false, replaced: false, awaitingApproval: false), .trusted)
    }

    func testStrangersAreUnknownOrUnverifiedKeysThatNeverExchangedAMessage() {
        typealias S = SessionTable<Int>.Standing
        var asked = 0
        let never = { () -> Bool? in
            asked += 1
            return false
        }
        XCTAssertEqual(S.of(pinned: false, verified: false, exchangedMessages: never), .stranger)
        XCTAssertEqual(S.of(pinned: true, verified: true, exchangedMessages: never), .known)
        XCTAssertEqual(asked, 0, "the store is asked only when it matters")
        XCTAssertEqual(S.of(pinned: true, verified: false, exchangedMessages: never), .stranger)
        XCTAssertEqual(S.of(pinned: true, verified: false, exchangedMessages: { true }), .known)
        XCTAssertEqual(
            S.of(pinned: true, verified: false, exchangedMessages: { nil }), .known,
            "a storage fault never makes a contact evictable")
    }

    func testTheSpoofCheckTrustsTheProofNotTheAdvertisement() {
        let proven = identity(7)
        XCTAssertEqual(AdvertisedIdentityCheck.check(claimed: nil, proven: proven), .noClaim)
        XCTAssertEqual(AdvertisedIdentityCheck.check(claimed: Fingerprint(proven).compact, proven: proven), .matches)
        let other = Fingerprint(identity(8)).compact
        XCTAssertEqual(AdvertisedIdentityCheck.check(claimed: other, proven: proven), .spoofed(claimed: other))
        // The grouped form is not what an advertisement carries: it does not match.
        XCTAssertEqual(
            AdvertisedIdentityCheck.check(claimed: Fingerprint(proven).description, proven: proven),
            .spoofed(claimed: Fingerprint(proven).description))
    }
}
