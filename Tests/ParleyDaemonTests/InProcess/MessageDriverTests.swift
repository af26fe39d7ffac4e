import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The message path's driver on a virtual-time loop with a real store: the search-index
/// purge after deletes runs on the mock clock, and the receive quota's counts are taken
/// from the store once and then kept current.
final class MessageDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-messagedriver")
        store = try Store(directory: directory)
    }

    override func tearDownWithError() throws {
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func driver(purges: @escaping () -> Void = {}) -> MessageDriver {
        MessageDriver(
            store: store, directory: PeerDirectory(store: store, myName: "me"), loop: loop, clock: clock,
            log: testLogger(), purgeSearchIndex: purges)
    }

    /// The first delete is purged at once; the ones within the next ten seconds share one
    /// purge when they end (mock clock); one still owed at stop runs then, and only once.
    func testDeletesArePurgedAtOnceThenOncePerIntervalOnTheMockClock() {
        var purges = 0
        let messages = driver { purges += 1 }
        messages.deleteApplied()
        XCTAssertEqual(purges, 1, "the first delete is purged at once")
        messages.deleteApplied()
        messages.deleteApplied()
        XCTAssertEqual(purges, 1, "later ones wait for the interval")
        loop.advanceTime(by: .milliseconds(9_999))
        XCTAssertEqual(purges, 1)
        loop.advanceTime(by: .milliseconds(1))
        XCTAssertEqual(purges, 2, "both waiting deletes in one purge")
        messages.purgeIfOwed()
        XCTAssertEqual(purges, 2, "nothing owed")

        messages.deleteApplied()
        XCTAssertEqual(purges, 2)
        messages.purgeIfOwed()
        XCTAssertEqual(purges, 3, "owed at stop: purged then")
        loop.advanceTime(by: .seconds(20))
        XCTAssertEqual(purges, 3, "and the timer does not purge again")
    }

    /// A purge that fails is logged, and the next delete tries again (nothing thrown).
    func testAFailedPurgeIsTriedAgainAtTheNextDelete() {
        var attempts = 0
        let messages = MessageDriver(
            store: store, directory: PeerDirectory(store: store, myName: "me"), loop: loop, clock: clock,
            log: testLogger(),
            purgeSearchIndex: {
                attempts += 1
                throw StoreError.invalidArgument("disk trouble")
            })
        messages.deleteApplied()
        loop.advanceTime(by: .seconds(11))
        messages.deleteApplied()
        XCTAssertEqual(attempts, 2)
    }

    private func incoming(_ n: Int, from sender: IdentityPublicKey, to me: IdentityPublicKey, body: String)
        -> IncomingMessage
    {
        IncomingMessage(
            id: MessageID.random(), sender: sender, recipient: me, sequence: Int64(n), createdAt: 1,
            body: body)
    }

    /// The quota's usage is counted from the store once, then kept current by `stored`
    /// without asking the store again; `countsChanged` (the user deleted messages) counts
    /// again. A stranger's messages count towards the strangers' share until the user
    /// writes to it, and from then on it is a correspondent.
    func testQuotaUsageIsCountedOnceThenKeptCurrentAndCountedAgainAfterDeletes() throws {
        let me = try TestIdentity(name: "me").card.identityKey
        let stranger = try TestIdentity(name: "stranger").card.identityKey
        let quota = driver().quota
        _ = try store.storeIncoming(
            [incoming(1, from: stranger, to: me, body: "abc"), incoming(2, from: stranger, to: me, body: "de")],
            at: 10)
        XCTAssertEqual(quota.standing(of: stranger), .stranger)
        var (peer, total) = try quota.usage(of: stranger)
        XCTAssertEqual(peer, ReceiveQuota.Usage(messages: 2, bytes: 5))
        XCTAssertEqual(total, ReceiveQuota.Usage(messages: 2, bytes: 5))
        XCTAssertEqual(try quota.strangersUsage(), ReceiveQuota.Usage(messages: 2, bytes: 5))

        // Stored behind the driver's back: the cache does not ask the store again...
        _ = try store.storeIncoming([incoming(3, from: stranger, to: me, body: "fghi")], at: 11)
        (peer, total) = try quota.usage(of: stranger)
        XCTAssertEqual(peer.messages, 2, "cached, not counted per read")
        // ...the node tells it what it stored.
        quota.stored([4], from: stranger)
        (peer, total) = try quota.usage(of: stranger)
        XCTAssertEqual(peer, ReceiveQuota.Usage(messages: 3, bytes: 9))
        XCTAssertEqual(total, ReceiveQuota.Usage(messages: 3, bytes: 9))
        XCTAssertEqual(try quota.strangersUsage(), ReceiveQuota.Usage(messages: 3, bytes: 9))

        XCTAssertEqual(try store.deleteConversation(with: stranger), 3)
        quota.countsChanged()
        (peer, total) = try quota.usage(of: stranger)
        XCTAssertEqual(peer, ReceiveQuota.Usage(messages: 0, bytes: 0), "counted again after the delete")

        _ = try store.enqueue(
            [NewOutgoingMessage(id: MessageID.random(), recipient: stranger, body: "hi", createdAt: 12)],
            sender: me)
        XCTAssertEqual(quota.standing(of: stranger), .correspondent, "written to by the user")
    }
}
