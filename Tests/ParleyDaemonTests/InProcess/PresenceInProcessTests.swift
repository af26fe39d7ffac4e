import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// Presence through whole nodes on one virtual-time loop: what the control side sees of a
/// peer (online, its status line) whichever event took it offline.
final class PresenceInProcessTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!

    override func setUp() {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
    }

    override func tearDown() {
        _ = try? loop.syncShutdownGracefully()
    }

    private func offline(_ events: [NodeEvent], _ peer: IdentityPublicKey) -> Int {
        events.filter { if case .peerOffline(peer.hex) = $0 { return true } else { return false } }.count
    }

    /// A known peer's session evicts a stranger's when the table is full: the stranger is
    /// offline, and its status line goes with it (it stayed shown in `peers.list` while
    /// the eviction's offline notice had a performer of its own).
    func testAnEvictedStrangersStatusLineIsForgotten() throws {
        var options = NodeOptions()
        options.maxSessions = 1
        let hub = try InProcessNode(name: "hub", loop: loop, clock: clock, options: options)
        let bob = try InProcessNode(name: "bob", loop: loop, clock: clock)
        let carol = try InProcessNode(name: "carol", loop: loop, clock: clock)
        defer {
            for n in [hub, bob, carol] {
                n.node.stop()
                try? FileManager.default.removeItem(atPath: n.directory)
            }
        }
        // Bob becomes known at the hub (verified), then goes away.
        let first = try InProcessLink(from: bob, to: hub, loop: loop)
        try first.exchange()
        let bobAtHub = try hub.node.resolvePeer(bob.identity.hex)
        _ = try hub.node.verify(bobAtHub, fingerprint: Fingerprint(bob.identity).description)
        first.initiatorConnection.close(reason: .normal)
        try first.exchange()
        XCTAssertFalse(hub.node.sessions.isOnline(bob.identity))

        // Carol, a stranger, fills the one session and says where she is.
        _ = try carol.node.setStatus("at lunch")
        let carolLink = try InProcessLink(from: carol, to: hub, loop: loop)
        try carolLink.exchange()
        let carolAtHub = try hub.node.resolvePeer(carol.identity.hex)
        XCTAssertEqual(hub.node.peerInfo(carolAtHub).status, "at lunch")

        // Bob comes back: carol's session makes room for him.
        let second = try InProcessLink(from: bob, to: hub, loop: loop)
        try second.exchange()
        try carolLink.exchange()
        XCTAssertTrue(hub.node.sessions.isOnline(bob.identity))
        XCTAssertFalse(hub.node.sessions.isOnline(carol.identity))
        XCTAssertEqual(offline(hub.events, carol.identity), 1)
        let info = hub.node.peerInfo(carolAtHub)
        XCTAssertFalse(info.online)
        XCTAssertNil(info.status, "an offline peer shows no status line")
    }
}
