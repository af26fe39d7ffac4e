import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The peer directory on a real store and the mock clock: names resolve through its
/// cache, a write through it is seen at once, and unused keys expire at most once per
/// interval.
final class PeerDirectoryTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var dir: String!
    var store: Store!
    var directory: PeerDirectory!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        dir = try makeTestDirectory("parley-peerdirectory")
        store = try Store(directory: dir)
        directory = PeerDirectory(store: store, myName: "me")
    }

    override func tearDownWithError() throws {
        directory = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: dir)
    }

    @discardableResult
    private func pin(_ name: String, trust: TrustState = .pinned, lastSeen: Int64 = 1) throws -> TestIdentity {
        let who = try TestIdentity(name: name)
        let c = who.card
        try directory.upsert(
            PeerRecord(
                identity: c.identityKey, displayName: c.displayName, hostName: c.hostName, card: c.encoded(),
                cardSequence: Int64(c.sequence), noiseKey: c.noiseKey, trust: trust, firstSeen: lastSeen,
                lastSeen: lastSeen, lastAddress: nil, replacedBy: nil))
        return who
    }

    func testAWriteThroughTheDirectoryIsSeenAtOnceAndASharedNameIsAmbiguous() throws {
        let bob = try pin("bob")
        XCTAssertEqual(try directory.resolve("bob").identity, bob.identity)
        let other = try pin("bob")
        XCTAssertThrowsError(try directory.resolve("bob")) { error in
            guard case NodeError.peerAmbiguous(_, let found) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(Set(found.map(\.identity)), [bob.identity, other.identity])
        }
        XCTAssertEqual(directory.nameClashes()[bob.card.identityKey]?.with, [other.card.identityKey])
        // A nickname written behind the directory's back is seen once it is told.
        try store.setNickname(identity: bob.identity, "work bob")
        directory.invalidate()
        XCTAssertEqual(try directory.resolve("work bob").identity, bob.identity)
        XCTAssertEqual(try directory.resolve("bob").identity, other.identity, "the nickname hides the name")
    }

    /// `resolve` remembers what a name found (a pipelining client names the same peer in
    /// every send) only while the records it was found in stand: every write through the
    /// directory, and `invalidate()`, make it resolve again.
    func testARememberedNameIsResolvedAgainAfterEveryWrite() throws {
        let carol = try pin("carol")
        XCTAssertEqual(try directory.resolve("carol").identity, carol.identity)
        XCTAssertEqual(try directory.resolve("carol").identity, carol.identity, "remembered")
        try directory.setTrust(identity: carol.identity, .blocked)
        XCTAssertEqual(try directory.resolve("carol").trust, .blocked, "a trust change through the directory")
        try store.setNickname(identity: carol.identity, "c")
        directory.invalidate()
        XCTAssertEqual(try directory.resolve("c").identity, carol.identity)
        let newCarol = try pin("carol2")
        var replaced = try XCTUnwrap(directory.peer(carol.identity))
        replaced.replacedBy = newCarol.identity
        try directory.upsert(replaced)
        XCTAssertThrowsError(try directory.resolve("c"), "a replaced key is never found") { error in
            guard case NodeError.peerNotFound = error else { return XCTFail("\(error)") }
        }
    }

    func testUnusedKeysExpireAtMostOncePerIntervalOnTheMockClock() throws {
        let idle = try pin("idle", lastSeen: 1)
        let online = try pin("online", lastSeen: 1)
        let due = { [self] in
            try directory.expireUnused(
                now: clock.monotonicNow(), every: .seconds(3_600), lastSeenBefore: 1_000,
                keep: [online.identity])
        }
        XCTAssertEqual(try due(), 1)
        XCTAssertNil(directory.peer(idle.identity), "the directory re-reads after an expiry")
        XCTAssertNotNil(directory.peer(online.identity), "a peer online now is kept")
        try pin("later", lastSeen: 1)
        loop.advanceTime(by: .seconds(3_599))
        XCTAssertNil(try due(), "not due within the interval")
        loop.advanceTime(by: .seconds(1))
        XCTAssertEqual(try due(), 1)
    }

    /// An advertisement naming a blocked key (by fingerprint or presence token) is not a
    /// known peer's: it is dialled like a stranger's, under the per-host rate.
    func testABlockedKeyIsNeverTheKnownPeerAnAdvertisementNames() throws {
        let friend = try pin("friend")
        let foe = try pin("foe", trust: .blocked)
        let names = { (who: TestIdentity) in
            self.directory.firstUnblocked { Fingerprint($0).compact == Fingerprint(who.card.identityKey).compact }
        }
        XCTAssertEqual(names(friend), friend.card.identityKey)
        XCTAssertNil(names(foe))
        XCTAssertNil(names(try TestIdentity(name: "unknown")))
    }

    /// A private presence token names us, a pinned peer, or nobody: a blocked peer's token
    /// (or one made under another network key, or in another epoch) names nobody, so the
    /// advertisement is dialled as a stranger's and claims no fingerprint.
    func testAPresenceTokenNamesUsAPinnedPeerOrNobody() throws {
        let me = try TestIdentity(name: "me").card.identityKey
        let friend = try pin("friend").card.identityKey
        let foe = try pin("foe", trust: .blocked).card.identityKey
        let networkKey = [UInt8](repeating: 7, count: 32)
        let nonce = [UInt8](repeating: 1, count: PresenceToken.nonceLength)
        let now: UInt64 = 1_750_000_000
        func token(_ key: IdentityPublicKey, key nk: [UInt8]? = networkKey, at t: UInt64 = now) -> (
            nonce: [UInt8], token: [UInt8]
        ) {
            (
                nonce,
                PresenceToken.make(
                    identity: key, networkKey: nk, epoch: PresenceToken.epoch(atUnixSeconds: t), nonce: nonce)
            )
        }
        func match(_ p: (nonce: [UInt8], token: [UInt8])) -> AdvertisementTriage.PresenceMatch {
            directory.presenceMatch(p, me: me, networkKey: networkKey, unixSeconds: now)
        }
        XCTAssertEqual(match(token(me)), .ours)
        XCTAssertEqual(match(token(friend)), .contact(friend))
        XCTAssertEqual(match(token(foe)), .nobody, "a blocked key is nobody we know")
        XCTAssertEqual(match(token(friend, key: [UInt8](repeating: 8, count: 32))), .nobody)
        XCTAssertEqual(match(token(friend, at: now + 10 * 86_400)), .nobody)
        XCTAssertTrue(directory.isKnown(compactFingerprint: Fingerprint(friend).compact))
        XCTAssertFalse(directory.isKnown(compactFingerprint: Fingerprint(foe).compact))
    }
}
