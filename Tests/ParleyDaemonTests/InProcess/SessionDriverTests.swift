import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The sessions driver, on a virtual-time loop: presence as the control side sees it
/// (online, offline, the status line) is the same whichever event took a peer offline.
final class SessionDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!

    override func setUp() {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
    }

    override func tearDown() {
        _ = try? loop.syncShutdownGracefully()
        for d in directories { try? FileManager.default.removeItem(atPath: d) }
    }

    private var directories: [String] = []

    /// A driver of its own (no node), over a real store in a temporary directory.
    private func bareDriver(me: IdentityPublicKey) throws -> SessionDriver {
        let directory = try makeTestDirectory("parley-sessions")
        directories.append(directory)
        let store = try Store(directory: directory)
        let dial = DialDriver(
            planner: DialPlanner(backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30))),
            loop: loop, clock: clock, random: LowestRandom(), store: store, log: testLogger(),
            attackLog: RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60)))
        return SessionDriver(
            table: SessionTable(me: me), loop: loop, clock: clock, log: testLogger(),
            attackLog: RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60)), dial: dial,
            directory: PeerDirectory(store: store, myName: "me"))
    }

    private func offline(_ events: [NodeEvent], _ peer: IdentityPublicKey) -> Int {
        events.filter { if case .peerOffline(peer) = $0 { return true } else { return false } }.count
    }

    /// The peer closed a duplicate connection: offline only after the debounce, on the
    /// mock clock, and then its status line is forgotten.
    func testTheOfflineDebounceRunsOnTheInjectedClockAndForgetsTheStatus() throws {
        let me = try TestIdentity(name: "me").card.identityKey
        let peer = try TestIdentity(name: "peer").card.identityKey
        let driver = try bareDriver(me: me)
        var events: [NodeEvent] = []
        driver.emit = { events.append($0) }
        let handle = ObjectIdentifier(NSObject())
        var activated = 0
        let side = SessionTieBreak.Side(direction: .inbound, remoteBootID: [1])
        XCTAssertTrue(
            driver.established(handle, peer: peer, side: side, source: nil, standing: .known) { activated += 1 })
        XCTAssertEqual(activated, 1)
        driver.statusReceived(try PresenceStatus(typed: "in a meeting"), from: peer)
        XCTAssertEqual(driver.statuses[peer]?.text, "in a meeting")

        XCTAssertTrue(driver.closed(handle, peer: peer, peerKeptAnother: true))
        loop.advanceTime(by: .milliseconds(1_999))
        XCTAssertEqual(offline(events, peer), 0, "the peer kept another connection: wait for it")
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(offline(events, peer), 1)
        XCTAssertNil(driver.statuses[peer])
    }

    /// An inbound connection holds one admission slot until its handshake ends; ending it
    /// twice (closed right after it was established) frees only its own slot, never that
    /// of another connection from the same source still handshaking.
    func testAHandshakeGivesBackItsAdmissionSlotOnce() throws {
        let hub = try InProcessNode(name: "hub", loop: loop, clock: clock)
        defer {
            hub.node.stop()
            try? FileManager.default.removeItem(atPath: hub.directory)
        }
        let driver = hub.node.sessionDriver
        XCTAssertEqual(driver.admit(source: "192.0.2.9"), .accept)
        XCTAssertEqual(driver.admit(source: "192.0.2.9"), .accept)
        let first = hub.node.makeConnection(direction: .inbound, dialedAddress: nil)
        _ = hub.node.makeConnection(direction: .inbound, dialedAddress: nil)
        XCTAssertEqual(driver.handshaking, 2)
        driver.handshakeEnded(ObjectIdentifier(first), source: "192.0.2.9")
        driver.handshakeEnded(ObjectIdentifier(first), source: "192.0.2.9")
        XCTAssertEqual(driver.handshaking, 1)
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
        XCTAssertFalse(hub.node.sessionDriver.table.isOnline(bob.identity))

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
        XCTAssertTrue(hub.node.sessionDriver.table.isOnline(bob.identity))
        XCTAssertFalse(hub.node.sessionDriver.table.isOnline(carol.identity))
        XCTAssertEqual(offline(hub.events, carol.identity), 1)
        let info = hub.node.peerInfo(carolAtHub)
        XCTAssertFalse(info.online)
        XCTAssertNil(info.status, "an offline peer shows no status line")
    }

    /// The keepalive tick runs every period on the mock clock until the node stops; after
    /// `stop` the driver says it is stopping and the tick never runs again.
    func testTheTickRunsOnTheInjectedClockUntilStop() throws {
        let me = try TestIdentity(name: "me").card.identityKey
        let driver = try bareDriver(me: me)
        var ticks = 0
        driver.startTicking(every: .seconds(5)) { ticks += 1 }
        loop.advanceTime(by: .milliseconds(4_999))
        XCTAssertEqual(ticks, 0)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(ticks, 1)
        loop.advanceTime(by: .seconds(10))
        XCTAssertEqual(ticks, 3)
        XCTAssertFalse(driver.stopping)
        driver.stop()
        XCTAssertTrue(driver.stopping)
        loop.advanceTime(by: .seconds(60))
        XCTAssertEqual(ticks, 3, "no tick after stop")
    }
}
