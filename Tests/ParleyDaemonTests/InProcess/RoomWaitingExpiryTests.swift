import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon

/// The node's periodic tick reaches the room driver (`Node.keepaliveTick` →
/// `RoomDriver.tick`): an operation a peer sent with a missing parent is dropped once it
/// waited `RoomAdmission.waitingTimeoutSeconds`, though no peer sends anything more.
final class RoomWaitingExpiryTests: XCTestCase {
    func testTheNodesTickExpiresWaitingRoomOperations() throws {
        let loop = EmbeddedEventLoop()
        let clock = LoopClock(loop: loop)
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        defer {
            alice.node.stop()
            _ = try? loop.syncShutdownGracefully()
        }
        let mallory = IdentityKeyPair.generate()
        let root = try RoomOperation.create(name: "elsewhere", members: [], by: mallory, createdAt: 1)
        let orphan = try RoomOperation.change(
            .rename("x"), roomID: root.roomID, after: [root], by: mallory, createdAt: 2)
        alice.node.start()
        XCTAssertEqual(
            alice.node.rooms.book.waiting.hold(orphan, from: mallory.publicKey, now: clock.monotonicNow()), .held)

        let interval = alice.node.options.keepalive.tickInterval.components
        let tick = TimeAmount.nanoseconds(interval.seconds * 1_000_000_000 + interval.attoseconds / 1_000_000_000)
        loop.advanceTime(by: .seconds(Int64(RoomAdmission.waitingTimeoutSeconds)) - tick)
        XCTAssertEqual(alice.node.rooms.book.waiting.total, 1, "not timed out yet")
        loop.advanceTime(by: tick + tick)
        XCTAssertEqual(alice.node.rooms.book.waiting.total, 0, "dropped on the node's tick")
    }
}
