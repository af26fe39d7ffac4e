import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The reachability and gossip driver on a virtual-time loop with a real store: who is a
/// contact, how long our signed record is reused, and the dial-back probe's timeout.
final class GossipDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var driver: GossipDriver!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-gossipdriver")
        store = try Store(directory: directory)
        let me = try TestIdentity(name: "me")
        let peers = PeerDirectory(store: store, myName: "me")
        let attackLog = RateLimitedLog(logger: testLogger(), level: .warning, interval: .seconds(60))
        let dial = DialDriver(
            planner: DialPlanner(backoff: RedialBackoff(initial: .milliseconds(500), maximum: .seconds(30))),
            loop: loop, clock: clock, random: LowestRandom(), store: store, log: testLogger(), attackLog: attackLog)
        driver = GossipDriver(
            identity: me.keys.identity, store: store, directory: peers,
            loop: loop, clock: clock, log: testLogger(), dial: dial,
            sessions: SessionDriver(
                table: SessionTable(me: me.card.identityKey), loop: loop, clock: clock, log: testLogger(),
                attackLog: attackLog, dial: dial, directory: peers))
    }

    override func tearDownWithError() throws {
        driver = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func pin(_ who: TestIdentity, _ trust: TrustState) throws {
        let c = who.card
        try driver.directory.upsert(
            PeerRecord(
                identity: c.identityKey, displayName: c.displayName, hostName: c.hostName, card: c.encoded(),
                cardSequence: Int64(c.sequence), noiseKey: c.noiseKey, trust: trust, firstSeen: 1, lastSeen: 1,
                lastAddress: nil, replacedBy: nil))
    }

    /// A key pinned by a handshake alone is a stranger (anyone on the LAN can complete one);
    /// a verified key is a contact, unless a person blocked it.
    func testOnlyTrustedVerifiedOrWrittenToKeysAreContacts() throws {
        let stranger = try TestIdentity(name: "stranger")
        let friend = try TestIdentity(name: "friend")
        let foe = try TestIdentity(name: "foe")
        try pin(stranger, .pinned)
        try pin(friend, .verified)
        try pin(foe, .blocked)
        XCTAssertFalse(driver.isContact(stranger.card.identityKey))
        XCTAssertTrue(driver.isContact(friend.card.identityKey))
        XCTAssertFalse(driver.isContact(foe.card.identityKey))
        XCTAssertFalse(driver.isContact(try TestIdentity(name: "unknown").card.identityKey))
        XCTAssertEqual(driver.contactSet(), [friend.card.identityKey])
    }

    /// Our record is signed once and reused for an hour on the mock clock, then signed again
    /// (its date must stay well inside the age relays accept).
    func testOurRecordIsReusedForItsLifetimeThenSignedAgain() throws {
        XCTAssertNil(driver.ownAddressRecord(), "no listener, no record")
        driver.listenAddresses = ["192.0.2.10:7744"]
        let first = try XCTUnwrap(driver.ownAddressRecord())
        XCTAssertEqual(first.endpoints.map(\.description), ["192.0.2.10:7744"])
        loop.advanceTime(by: .minutes(59))
        XCTAssertEqual(driver.ownAddressRecord()?.issuedAt, first.issuedAt)
        loop.advanceTime(by: .minutes(1))
        let second = try XCTUnwrap(driver.ownAddressRecord())
        XCTAssertEqual(second.issuedAt, first.issuedAt + 3_600_000)
    }

    func testAWildcardListenerIsReachableAtTheHostsUnicastAddressesOnly() {
        let endpoints = GossipDriver.listeningEndpoints(["0.0.0.0:7744", "[::]:7745"]) {
            ["192.0.2.10", "2001:db8::5"]
        }
        XCTAssertEqual(endpoints.map(\.description), ["192.0.2.10:7744", "192.0.2.10:7745", "[2001:db8::5]:7745"])
    }
}

/// The dial-back probe through a whole node: an unanswered probe reports nil once, at its
/// timeout on the mock clock, and a late answer is ignored.
final class DialBackInProcessTests: XCTestCase {
    func testAnUnansweredProbeTimesOutOnceAndALateAnswerIsIgnored() throws {
        let loop = EmbeddedEventLoop()
        let clock = LoopClock(loop: loop)
        let alice = try InProcessNode(name: "alice", loop: loop, clock: clock)
        let bob = try InProcessNode(name: "bob", loop: loop, clock: clock)
        defer {
            for n in [alice, bob] {
                n.node.stop()
                try? FileManager.default.removeItem(atPath: n.directory)
            }
            _ = try? loop.syncShutdownGracefully()
        }
        try InProcessLink(from: alice, to: bob, loop: loop).exchange()
        alice.node.gossipDriver.listenPorts = [7744]
        var reports: [DialBackResult.Outcome?] = []
        // The request stays in alice's outbound frames: bob never answers.
        XCTAssertTrue(alice.node.requestDialBack(from: bob.identity, timeout: .seconds(5)) { reports.append($0) })
        XCTAssertEqual(alice.node.gossipDriver.dialBackWaiting, 1)
        loop.advanceTime(by: .milliseconds(4_999))
        XCTAssertTrue(reports.isEmpty)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(reports.count, 1)
        XCTAssertNil(reports[0] ?? nil)
        XCTAssertEqual(alice.node.gossipDriver.dialBackWaiting, 0)
        alice.node.gossipDriver.dialBackAnswered(DialBackResult(nonce: 42, outcome: .connected))
        XCTAssertEqual(reports.count, 1)
        XCTAssertFalse(
            alice.node.requestDialBack(from: try TestIdentity(name: "x").card.identityKey, timeout: .seconds(1)) { _ in
            })
    }
}
