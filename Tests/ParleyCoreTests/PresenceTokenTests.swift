import ParleyCore
import XCTest

final class PresenceTokenTests: XCTestCase {
    let alice = IdentityKeyPair.generate().publicKey
    let bob = IdentityKeyPair.generate().publicKey
    let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    func testAContactRecognisesTheTokenInThisAndTheNeighbouringEpochs() {
        let t = PresenceToken.make(identity: alice, networkKey: nil, epoch: 100, nonce: nonce)
        XCTAssertEqual(t.count, PresenceToken.tokenLength)
        for e: UInt64 in [99, 100, 101] {
            XCTAssertTrue(PresenceToken.matches(t, nonce: nonce, identity: alice, networkKey: nil, epoch: e))
        }
        XCTAssertFalse(PresenceToken.matches(t, nonce: nonce, identity: alice, networkKey: nil, epoch: 102))
        XCTAssertFalse(
            PresenceToken.matches(t, nonce: nonce, identity: bob, networkKey: nil, epoch: 100),
            "another key does not match")
    }

    func testTokensOfOneNodeCannotBeLinkedWithoutItsKey() {
        let a = PresenceToken.make(identity: alice, networkKey: nil, epoch: 100, nonce: nonce)
        XCTAssertNotEqual(
            a, PresenceToken.make(identity: alice, networkKey: nil, epoch: 101, nonce: nonce), "rotates per epoch")
        XCTAssertNotEqual(
            a, PresenceToken.make(identity: alice, networkKey: nil, epoch: 100, nonce: [9, 9, 9, 9, 9, 9, 9, 9]),
            "and per nonce")
        XCTAssertEqual(
            a, PresenceToken.make(identity: alice, networkKey: nil, epoch: 100, nonce: nonce), "deterministic")
    }

    func testWithANetworkKeyTheIdentityKeyAloneIsNotEnough() {
        let key = [UInt8](repeating: 0x5a, count: 32)
        let t = PresenceToken.make(identity: alice, networkKey: key, epoch: 7, nonce: nonce)
        XCTAssertTrue(PresenceToken.matches(t, nonce: nonce, identity: alice, networkKey: key, epoch: 7))
        XCTAssertFalse(PresenceToken.matches(t, nonce: nonce, identity: alice, networkKey: nil, epoch: 7))
        XCTAssertFalse(
            PresenceToken.matches(
                t, nonce: nonce, identity: alice, networkKey: [UInt8](repeating: 1, count: 32), epoch: 7))
    }

    func testMalformedTokensAndNoncesNeverMatch() {
        let t = PresenceToken.make(identity: alice, networkKey: nil, epoch: 7, nonce: nonce)
        XCTAssertFalse(
            PresenceToken.matches(Array(t.dropLast()), nonce: nonce, identity: alice, networkKey: nil, epoch: 7))
        XCTAssertFalse(PresenceToken.matches(t, nonce: [1], identity: alice, networkKey: nil, epoch: 7))
        XCTAssertFalse(PresenceToken.matches([], nonce: [], identity: alice, networkKey: nil, epoch: 0))
    }

    func testEpochsAreHours() {
        XCTAssertEqual(PresenceToken.epoch(atUnixSeconds: 3599), 0)
        XCTAssertEqual(PresenceToken.epoch(atUnixSeconds: 3600), 1)
    }
}
