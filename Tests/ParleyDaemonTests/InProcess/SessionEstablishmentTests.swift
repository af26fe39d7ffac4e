import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The sessions driver performing `EstablishedSessionDecision` and a connection's close,
/// on whole nodes (real stores in temporary directories, real handshakes over an
/// in-process link, a mock clock), with a recording `SessionHost` in front of the node:
/// what a LAN attacker's floods, spoofed advertisements and racing duplicates get.
final class SessionEstablishmentTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var nodes: [InProcessNode] = []
    var hosts: [RecordingSessionHost] = []

    override func setUp() {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
    }

    override func tearDown() {
        for n in nodes {
            n.node.stop()
            try? FileManager.default.removeItem(atPath: n.directory)
        }
        nodes = []
        hosts = []
        _ = try? loop.syncShutdownGracefully()
    }

    private func node(_ name: String, options: NodeOptions = NodeOptions()) throws -> InProcessNode {
        let n = try InProcessNode(name: name, loop: loop, clock: clock, options: options)
        nodes.append(n)
        return n
    }

    /// Puts a recorder between `n`'s sessions driver and the node.
    private func record(_ n: InProcessNode) -> RecordingSessionHost {
        let host = RecordingSessionHost(n.node)
        n.node.sessionDriver.host = host
        hosts.append(host)
        return host
    }

    /// A configured dial target of `n` for a documentation address (nothing is really dialled).
    private func dialTarget(at n: InProcessNode) -> DialTargetKey {
        n.node.dialDriver.open = { _, _, _ in }
        let address = DialAddress(host: "192.0.2.7", port: 7744)
        n.node.perform(n.node.dialDriver.planner.addConfigured(address, sessions: n.node.sessionView))
        return DialTargetKey(address: address)
    }

    /// Over the session limit: the stranger is refused before the trust decision, so its
    /// key is not pinned, and nothing starts for it.
    func testTheSessionLimitRefusesAStrangerBeforeItsKeyIsPinned() throws {
        var options = NodeOptions()
        options.maxSessions = 1
        let hub = try node("hub", options: options)
        let bob = try node("bob")
        let carol = try node("carol")
        let recorder = record(hub)
        try InProcessLink(from: bob, to: hub, loop: loop).exchange()
        XCTAssertTrue(hub.node.sessionDriver.table.isOnline(bob.identity))

        let flood = try InProcessLink(from: carol, to: hub, loop: loop)
        try flood.exchange()
        XCTAssertFalse(hub.node.sessionDriver.table.isOnline(carol.identity))
        XCTAssertNil(try hub.node.store.peer(identity: carol.identity), "a refused stranger's key is not pinned")
        XCTAssertFalse(flood.responder.isActive, "closed")
        XCTAssertEqual(recorder.trustAsked, [bob.identity])
        XCTAssertEqual(recorder.started, [bob.identity])
    }

    /// An advertisement claimed one fingerprint and the handshake proved another: closed,
    /// the dial target flagged as spoofed, and the proven key neither pinned nor trusted.
    func testASpoofedAdvertisementIsClosedAndThePlannerTold() throws {
        let hub = try node("hub")
        let mallory = try node("mallory")
        let bob = try node("bob")
        let recorder = record(hub)
        let key = dialTarget(at: hub)
        let link = try InProcessLink(
            from: hub, to: mallory, loop: loop, dialTarget: key,
            expectedFingerprint: Fingerprint(bob.identity).compact)
        try link.exchange()
        XCTAssertEqual(hub.node.dialDriver.planner.targets[key]?.spoofed, true)
        XCTAssertNil(hub.node.dialDriver.planner.targets[key]?.identity, "the lying target proved nobody")
        XCTAssertFalse(hub.node.sessionDriver.table.isOnline(mallory.identity))
        XCTAssertNil(try hub.node.store.peer(identity: mallory.identity))
        XCTAssertEqual(recorder.trustAsked, [])
        XCTAssertFalse(link.initiator.isActive)
    }

    /// Racing duplicates: the second connection of the same pair loses the tie-break on
    /// both ends and is closed; gossip, the pumps and room sync start only on the kept one.
    func testADuplicateSessionIsClosedWithoutStartingAnything() throws {
        let a = try node("a")
        let b = try node("b")
        // The connection the smaller key initiated wins: the first one, here.
        let (small, large) = a.identity.bytes.lexicographicallyPrecedes(b.identity.bytes) ? (a, b) : (b, a)
        let atSmall = record(small)
        let atLarge = record(large)
        let first = try InProcessLink(from: small, to: large, loop: loop)
        try first.exchange()
        let second = try InProcessLink(from: large, to: small, loop: loop)
        try second.exchange()
        try first.exchange()
        XCTAssertEqual(
            small.node.sessionDriver.table.handle(for: large.identity), ObjectIdentifier(first.initiatorConnection))
        XCTAssertFalse(second.initiator.isActive || second.responder.isActive, "the duplicate is closed")
        XCTAssertEqual(atSmall.startedOn, [ObjectIdentifier(first.initiatorConnection)])
        XCTAssertEqual(atLarge.startedOn, [ObjectIdentifier(first.responderConnection)])
        XCTAssertEqual(atSmall.ended, [], "the kept session never went down")
        XCTAssertEqual(atLarge.ended, [])
    }

    /// A session that ends tells the dial planner (its targets are dialled again) and the
    /// host (gossip, room sync, rooms).
    func testSessionDownTellsThePlannerAndTheHost() throws {
        let hub = try node("hub")
        let bob = try node("bob")
        let recorder = record(hub)
        let key = dialTarget(at: hub)
        let link = try InProcessLink(from: hub, to: bob, loop: loop, dialTarget: key)
        try link.exchange()
        XCTAssertEqual(hub.node.dialDriver.planner.targets[key]?.identity, bob.identity)
        XCTAssertNotEqual(hub.node.dialDriver.planner.targets[key]?.redialArmed, true)
        XCTAssertEqual(recorder.started, [bob.identity])

        link.responderConnection.close(reason: .normal)
        try link.exchange()
        XCTAssertFalse(hub.node.sessionDriver.table.isOnline(bob.identity))
        XCTAssertEqual(recorder.closing, [ObjectIdentifier(link.initiatorConnection)])
        XCTAssertEqual(recorder.ended, [bob.identity])
        XCTAssertEqual(
            hub.node.dialDriver.planner.targets[key]?.redialArmed, true, "the target that reached bob is dialled again")
    }

    /// A dialled connection the peer refuses by its trust: the dial's watcher hears why.
    func testADialRefusedByThePeersTrustTellsTheWatcherWhy() throws {
        let hub = try node("hub")
        let bob = try node("bob")
        // Bob blocks the hub.
        let first = try InProcessLink(from: hub, to: bob, loop: loop)
        try first.exchange()
        try bob.node.setTrust(identity: hub.identity, .blocked)
        first.initiatorConnection.close(reason: .normal)
        try first.exchange()
        let key = dialTarget(at: hub)
        var heard: [String] = []
        _ = hub.node.watchDial(key) { if case .failed(let why) = $0 { heard.append(why) } }
        let link = try InProcessLink(from: hub, to: bob, loop: loop, dialTarget: key)
        try link.exchange()
        XCTAssertEqual(heard.count, 1)
        XCTAssertTrue(heard.first?.contains("does not trust this node") ?? false, "\(heard)")
    }

    /// The keepalive tick's resend: nothing before the ack timeout; past it, the session's
    /// window starts over and the host pumps it again.
    func testTheTickResendsOnAckTimeout() throws {
        let alice = try node("alice")
        let bob = try node("bob")
        let recorder = record(alice)
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        _ = try alice.node.send(to: try alice.node.resolvePeer("bob"), body: "are you there?")
        _ = try link.initiatorFramesHeld()  // the chat is in flight; no ack comes back
        recorder.pumped = []
        loop.advanceTime(by: .seconds(29))
        alice.node.sessionDriver.resendTimedOut(now: clock.monotonicNow())
        XCTAssertEqual(recorder.pumped, [])
        loop.advanceTime(by: .seconds(2))
        alice.node.sessionDriver.resendTimedOut(now: clock.monotonicNow())
        XCTAssertEqual(recorder.pumped, [ObjectIdentifier(link.initiatorConnection)])
    }

    /// A signed address record on a session: a stranger's (a key pinned by a handshake
    /// alone, which anyone on the LAN can mint) is not taken; a verified contact's is kept
    /// in the address book and dialled.
    func testAnAddressRecordIsTakenOnlyFromAContact() throws {
        let alice = try node("alice")
        let bob = try node("bob")
        let link = try InProcessLink(from: alice, to: bob, loop: loop)
        try link.exchange()
        alice.node.dialDriver.open = { _, _, _ in }
        let record = try SignedAddressRecord(
            signing: [try XCTUnwrap(SignedAddressRecord.Endpoint(host: "192.0.2.50", port: 7744))],
            issuedAt: UInt64(clock.wallMilliseconds()), with: bob.node.ownIdentity.keys.identity)
        let remembered = DialTargetKey(rememberedPeer: bob.identity)

        alice.node.connection(link.initiatorConnection, receivedAddressRecord: record)
        XCTAssertNil(alice.node.dialDriver.planner.targets[remembered]?.candidates.first { $0.host == "192.0.2.50" })
        XCTAssertNil(try alice.node.store.rememberedAddresses()[bob.identity]?.first { $0.hasPrefix("192.0.2.50") })

        _ = try alice.node.verify(
            try alice.node.resolvePeer(bob.identity.hex), fingerprint: Fingerprint(bob.identity).description)
        alice.node.connection(link.initiatorConnection, receivedAddressRecord: record)
        XCTAssertNotNil(
            alice.node.dialDriver.planner.targets[remembered]?.candidates.first { $0.host == "192.0.2.50" })
        XCTAssertNotNil(try alice.node.store.rememberedAddresses()[bob.identity]?.first { $0.hasPrefix("192.0.2.50") })
    }

    /// A sighting the store cannot write is a typed outcome (logged by the driver), never
    /// a lost session.
    func testASightingTheStoreCannotWriteIsReported() throws {
        let directory = try makeTestDirectory("parley-sighting")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Store(directory: directory)
        let peers = PeerDirectory(store: store, myName: "me")
        let card = try TestIdentity(name: "peer").card
        let peer = card.identityKey
        guard case .notRecorded = peers.touch(peer, at: 1, address: nil) else {
            return XCTFail("an unknown peer's sighting was recorded")
        }
        try peers.upsert(
            PeerRecord(
                identity: peer, displayName: "peer", hostName: "peer-host", card: card.encoded(),
                cardSequence: 1, noiseKey: card.noiseKey, trust: .pinned, firstSeen: 1, lastSeen: 1,
                lastAddress: nil, replacedBy: nil))
        XCTAssertEqual(peers.touch(peer, at: 2, address: nil), .recorded)
        try store.close()
        guard case .notRecorded = peers.touch(peer, at: 3, address: nil) else {
            return XCTFail("a closed store recorded a sighting")
        }
    }
}

/// A `SessionHost` that records what the sessions driver asked of it and forwards every
/// call to the node (so the node behaves as it does in the daemon).
final class RecordingSessionHost: SessionHost {
    let node: Node
    var trustAsked: [IdentityPublicKey] = []
    var started: [IdentityPublicKey] = []
    var startedOn: [ObjectIdentifier] = []
    var closing: [ObjectIdentifier] = []
    var ended: [IdentityPublicKey] = []
    var pumped: [ObjectIdentifier] = []

    init(_ node: Node) { self.node = node }

    func judgeTrust(of card: Card, connection: PeerConnection, dialTarget: DialTargetKey?)
        -> (reason: CloseReason, text: String)?
    {
        trustAsked.append(card.identityKey)
        return node.judgeTrust(of: card, connection: connection, dialTarget: dialTarget)
    }

    var listenPorts: [UInt16] { node.listenPorts }

    func sessionStarted(_ conn: PeerConnection, peer: IdentityPublicKey) {
        started.append(peer)
        startedOn.append(ObjectIdentifier(conn))
        node.sessionStarted(conn, peer: peer)
    }

    func sessionClosing(_ conn: PeerConnection) {
        closing.append(ObjectIdentifier(conn))
        node.sessionClosing(conn)
    }

    func sessionEnded(_ peer: IdentityPublicKey) {
        ended.append(peer)
        node.sessionEnded(peer)
    }

    func pump(_ conn: PeerConnection) {
        pumped.append(ObjectIdentifier(conn))
        node.pump(conn)
    }

    func coMembers() -> Set<IdentityPublicKey> { node.coMembers() }
}
