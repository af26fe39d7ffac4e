import Foundation
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// `trust.replace` is two store writes (the replacement, then the old nickname onto the
/// new key). When the second fails (a full disk), the first has committed: the old key is
/// replaced in the store. The node must read its peers again even then: a name it
/// resolved before (the directory remembers resolutions) must never keep naming the
/// replaced key, or the person's next message would be queued to the key they just
/// retired (a lost or stolen device's).
final class ReplaceKeyFailureTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var alice: InProcessNode!
    var oldBob: InProcessNode!
    var newBob: InProcessNode!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        oldBob = try InProcessNode(name: "bob", loop: loop, clock: clock)
        newBob = try InProcessNode(name: "bob", loop: loop, clock: clock)
    }

    override func tearDownWithError() throws {
        for n in [alice, oldBob, newBob] { n!.node.stop() }
        _ = try? loop.syncShutdownGracefully()
        alice = nil
        oldBob = nil
        newBob = nil
    }

    func testAReplacementWhoseNicknameCopyFailsStillStopsNamingTheOldKey() throws {
        try InProcessLink(from: alice, to: oldBob, loop: loop).exchange()
        let old = try alice.node.setNickname(try alice.node.resolvePeer("bob"), "Bob")
        XCTAssertEqual(old.identity, oldBob.identity)
        XCTAssertEqual(try alice.node.resolvePeer("Bob").identity, oldBob.identity, "resolved (and remembered)")
        try InProcessLink(from: alice, to: newBob, loop: loop).exchange()
        XCTAssertEqual(try alice.node.resolvePeer("Bob").identity, oldBob.identity, "the nickname still names it")

        // The nickname's copy onto the new key fails, after the replacement committed.
        try alice.node.store.write { db in
            try db.execute(
                sql: """
                    CREATE TEMP TRIGGER nickname_fails BEFORE UPDATE OF nickname ON peer
                    BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                    """)
        }
        XCTAssertThrowsError(
            try alice.node.replaceKey(of: old, newFingerprint: Node.fingerprint(of: newBob.identity)))
        XCTAssertEqual(
            try alice.node.store.peer(identity: oldBob.identity)?.replacedBy, newBob.identity,
            "the replacement itself committed")

        // "Bob" no longer sends to the retired key (it names the new one by its name, or fails).
        let sent = try? alice.node.send(to: try alice.node.resolvePeer("Bob"), body: "the new door code is 4711")
        XCTAssertNotEqual(sent?.recipient, .peer(oldBob.identity))
        XCTAssertEqual(
            try alice.node.store.pendingOutgoing(to: oldBob.identity, afterSequence: 0, limit: 10).count, 0,
            "nothing queued to the replaced key")
    }
}
