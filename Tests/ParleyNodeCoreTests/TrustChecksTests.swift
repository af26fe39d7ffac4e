import ParleyCore
import XCTest

@testable import ParleyNodeCore

/// The pure checks behind the person's trust requests and the handshake's refusals:
/// `FingerprintConfirmation`, `KeyReplacementCheck`, `TrustAdmission`.
final class TrustChecksTests: XCTestCase {
    let bob = identity(0xB0)
    let mallory = identity(0x3A)
    let carol = identity(0xCA)

    private func printed(_ key: IdentityPublicKey) -> String { Fingerprint(key).description }

    // MARK: FingerprintConfirmation

    func testOnlyTheWholeFingerprintConfirmsAKey() {
        let whole = printed(bob)
        let normalised = Fingerprint.normalize(whole)!
        XCTAssertEqual(FingerprintConfirmation.confirm(whole, is: bob), .whole(normalised))
        XCTAssertEqual(
            FingerprintConfirmation.confirm(whole.uppercased().replacingOccurrences(of: "-", with: " "), is: bob),
            .whole(normalised), "case and separators do not matter")
        XCTAssertEqual(
            FingerprintConfirmation.confirm(String(whole.prefix(19)), is: bob),
            .tooShort(needed: Fingerprint.characterCount), "a prefix finds a peer but never vouches for it")
        XCTAssertEqual(FingerprintConfirmation.confirm(printed(mallory), is: bob), .mismatch)
        XCTAssertEqual(
            FingerprintConfirmation.confirm(String(printed(mallory).prefix(9)), is: bob), .mismatch,
            "a prefix of another key is a mismatch, not merely short")
        XCTAssertEqual(FingerprintConfirmation.confirm("bob!", is: bob), .mismatch, "not a fingerprint")
        XCTAssertEqual(FingerprintConfirmation.confirm(whole + "aa", is: bob), .mismatch, "longer is not it either")
    }

    func testReadingWithoutAnExpectedKeyNeedsOnlyTheWholeLength() {
        XCTAssertEqual(FingerprintConfirmation.read(String(printed(bob).prefix(9))), .tooShort(needed: 32))
        XCTAssertEqual(FingerprintConfirmation.read("0000"), .mismatch, "0 never occurs in a fingerprint")
        guard case .whole(let g) = FingerprintConfirmation.read(printed(carol)) else { return XCTFail() }
        XCTAssertTrue(FingerprintConfirmation.names(g, carol))
        XCTAssertFalse(FingerprintConfirmation.names(g, bob))
    }

    // MARK: KeyReplacementCheck

    private func key(_ k: IdentityPublicKey, replacedBy: IdentityPublicKey? = nil) -> KeyReplacementCheck.Key {
        .init(identity: k, replacedBy: replacedBy)
    }

    func testAReplacementNeedsAKnownCurrentOtherKeyAndItsSafetyNumber() {
        let number = "12345 67890 11111 22222 33333 44444 55555 66666 77777 88888 99999 00000"
        func check(_ old: KeyReplacementCheck.Key, _ new: KeyReplacementCheck.Key?, _ typed: String?)
            -> KeyReplacementCheck.Refusal?
        {
            KeyReplacementCheck.check(old: old, new: new, typedSafetyNumber: typed, expectedSafetyNumber: number)
        }
        XCTAssertNil(check(key(bob), key(mallory), number))
        XCTAssertNil(check(key(bob), key(mallory), nil), "the client compared it (older clients)")
        XCTAssertNil(
            check(key(bob), key(mallory), number.replacingOccurrences(of: " ", with: "-")), "separators ignored")
        XCTAssertEqual(check(key(bob), nil, number), .newKeyNotFound)
        XCTAssertEqual(check(key(bob), key(bob), number), .sameKey)
        XCTAssertEqual(check(key(bob), key(mallory, replacedBy: carol), number), .newKeyReplaced(by: carol))
        XCTAssertEqual(check(key(bob, replacedBy: carol), key(mallory), number), .oldKeyReplaced(by: carol))
        XCTAssertEqual(check(key(bob), key(mallory), String(number.dropLast())), .safetyNumberMismatch)
        XCTAssertEqual(check(key(bob), key(mallory), ""), .safetyNumberMismatch, "an empty answer is no answer")
        XCTAssertEqual(check(key(bob), key(mallory), number + "1"), .safetyNumberMismatch)
    }

    func testAnEmptyExpectedSafetyNumberMatchesNothing() {
        XCTAssertFalse(KeyReplacementCheck.safetyNumber("", matches: ""))
        XCTAssertFalse(KeyReplacementCheck.safetyNumber("123", matches: "--"))
        XCTAssertTrue(KeyReplacementCheck.safetyNumber("1 2 3", matches: "123"))
    }

    // MARK: NicknameCheck

    func testANicknameMustNotLookLikeAnotherLivePeersNameOrOurs() {
        let entries = [
            NameClashes.Entry(identity: bob, selfAssertedName: "bob"),
            NameClashes.Entry(identity: carol, selfAssertedName: "carol", nickname: "Carol (lab)"),
            NameClashes.Entry(identity: mallory, selfAssertedName: "mallory")
        ]
        func check(_ n: String?) -> NicknameCheck.Refusal? {
            NicknameCheck.check(n, for: mallory, among: entries, myName: "alice")
        }
        XCTAssertEqual(check("bob"), .looksLikeAnotherPeer([bob]))
        XCTAssertEqual(check("B\u{043E}B"), .looksLikeAnotherPeer([bob]), "look-alike letters")
        XCTAssertEqual(check("carol (lab)"), .looksLikeAnotherPeer([carol]), "another's nickname")
        XCTAssertEqual(check("carol"), .looksLikeAnotherPeer([carol]), "another's own name, though nicknamed")
        XCTAssertEqual(check("Alice"), .looksLikeMe)
        XCTAssertNil(check("Mallory"), "its own name")
        XCTAssertNil(check("bob (impostor?)"))
        XCTAssertNil(check(nil), "removing a nickname is always fine")
    }

    // MARK: TrustAdmission

    func testEachRefusalHasItsTextAndOnlyAttacksAreLogged() {
        let cases: [(TrustDecision.Refusal, String, Bool)] = [
            (.blocked, "blocked", false),
            (.awaitingApproval, "awaiting approval", false),
            (.replaced, "key was replaced", true),
            (.staleCard(presented: 1, pinned: 2), "stale card", true),
            (.conflictingCard, "conflicting card", true)
        ]
        for (refusal, text, logged) in cases {
            XCTAssertEqual(TrustAdmission.refusal(refusal), .refuse(.notTrusted, text))
            XCTAssertEqual(TrustAdmission.securityNote(refusal) != nil, logged, "\(refusal)")
        }
        XCTAssertEqual(TrustAdmission.heldForApproval, .refuse(.notTrusted, "awaiting approval"))
        XCTAssertEqual(TrustAdmission.storageFailure, .refuse(.normal, "receiver storage failure"))
    }
}
