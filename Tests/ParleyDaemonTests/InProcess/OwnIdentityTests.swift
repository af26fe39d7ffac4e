import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// Who the node is: a re-issued card has a higher sequence, is kept, and is what `whoami`
/// says at once; a rotated Noise key is on disk and in the next card.
final class OwnIdentityTests: XCTestCase {
    func testAReissuedCardIsKeptAndWhoamiFollowsIt() throws {
        let loop = EmbeddedEventLoop()
        let clock = LoopClock(loop: loop)
        let dir = try makeTestDirectory("parley-ownidentity")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (keys, _) = try KeyFiles.loadOrCreate(stateDirectory: dir)
        let store = try Store(directory: dir)
        let card = try Card.issue(
            identity: keys.identity, noiseKey: keys.noiseStatic.publicKey, displayName: "ann", hostName: "h",
            issuedAt: UInt64(clock.wallMilliseconds() / 1000), sequence: 1)
        let me = OwnIdentity(keys: keys, card: card, networkKey: nil, store: store, clock: clock)
        XCTAssertEqual(me.whoami().name, "ann")
        XCTAssertEqual(me.uptimeSeconds, 0)

        loop.advanceTime(by: .seconds(2))
        XCTAssertEqual(me.uptimeSeconds, 2, "uptime runs on the injected clock")
        let next = try me.reissue(displayName: "Ann B.", hostName: "h")
        XCTAssertGreaterThan(next.sequence, card.sequence)
        XCTAssertEqual(me.whoami().name, "Ann B.", "the cached answer follows the card")
        XCTAssertEqual(me.whoami().cardSequence, Int(next.sequence))
        XCTAssertEqual(try store.setting(OwnCard.settingKey), Sodium.hex(next.encoded()))

        XCTAssertThrowsError(try me.rotateNoiseKey(), "no state directory: nowhere to keep the key")
        me.stateDirectory = dir
        let before = me.keys.noiseStatic.publicKey
        try me.rotateNoiseKey()
        XCTAssertNotEqual(me.keys.noiseStatic.publicKey, before)
        XCTAssertEqual(
            try KeyFiles.loadOrCreate(stateDirectory: dir).0.noiseStatic.publicKey, me.keys.noiseStatic.publicKey)
        loop.advanceTime(by: .seconds(2))
        XCTAssertEqual(try me.reissue(displayName: "Ann B.", hostName: "h").noiseKey, me.keys.noiseStatic.publicKey)
        _ = try? loop.syncShutdownGracefully()
    }
}
