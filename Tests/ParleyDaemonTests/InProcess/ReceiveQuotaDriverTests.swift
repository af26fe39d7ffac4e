import Foundation
import NIOCore
import NIOEmbedded
import ParleyCore
import ParleyNodeCore
import XCTest

@testable import ParleyDaemon
@testable import ParleyStore

/// The receive quota's driver with a real store (SQLite in a temporary directory), a mock
/// clock and a host that says how much disk is free: a read's verdicts, a resend never
/// refused, a count the store cannot give taking nothing, and a peer's refusal of ours.
final class ReceiveQuotaDriverTests: XCTestCase {
    var loop: EmbeddedEventLoop!
    var clock: LoopClock!
    var directory: String!
    var store: Store!
    var me: TestIdentity!
    var bob: TestIdentity!
    var host: QuotaTestHost!

    override func setUpWithError() throws {
        loop = EmbeddedEventLoop()
        clock = LoopClock(loop: loop)
        directory = try makeTestDirectory("parley-quota")
        store = try Store(directory: directory)
        me = try TestIdentity(name: "me")
        bob = try TestIdentity(name: "bob")
        host = QuotaTestHost()
    }

    override func tearDownWithError() throws {
        host = nil
        store = nil
        _ = try? loop.syncShutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Strangers may keep two messages each here.
    private func driver() -> ReceiveQuotaDriver {
        var limits = ReceiveQuota.standard
        limits.stranger = ReceiveQuota.Allowance(messages: 2, bytes: 1 << 20)
        let d = ReceiveQuotaDriver(
            store: store, directory: PeerDirectory(store: store, myName: "me"), limits: limits, clock: clock,
            log: testLogger())
        d.host = host
        return d
    }

    @discardableResult
    private func storedFromBob(_ n: Int) throws -> [MessageID] {
        let chats = (1...n).map { ReceivedChat(id: .random(), sequence: Int64($0), createdAt: 1, body: "m\($0)") }
        _ = try store.storeIncoming(chats, from: bob.identity, to: me.identity, at: 1, journal: nil)
        return chats.map(\.id)
    }

    /// The refusal's advice names the commands' peer by its key in hex, never by the name
    /// the peer chose: a name may be another peer's (the command would block or delete the
    /// wrong one) or hold shell syntax the person would paste and run.
    func testTheRefusalAdviceNamesTheKeyNotThePeersChosenName() throws {
        let lines = CollectedLogLines()
        var limits = ReceiveQuota.standard
        limits.stranger = ReceiveQuota.Allowance(messages: 2, bytes: 1 << 20)
        let quota = ReceiveQuotaDriver(
            store: store, directory: PeerDirectory(store: store, myName: "me"), limits: limits, clock: clock,
            log: lines.logger())
        quota.host = host
        host.name = "alice $(touch /tmp/owned)"
        try storedFromBob(2)
        XCTAssertEqual(try quota.judge([(.random(), 3)], from: bob.identity).verdicts, [.peerQuota])
        let advice = try XCTUnwrap(lines.lines.first { $0.contains("over the receive quota") }, "\(lines.lines)")
        XCTAssertTrue(advice.contains("parley trust block \(bob.identity.hex)"), advice)
        XCTAssertFalse(advice.contains("block alice"), advice)
    }

    /// A stranger at its allowance: a new message is refused (`peerQuota`), a resend of
    /// one already stored is not (it goes on to be acknowledged, else the sender would
    /// retry it for ever).
    func testOverTheAllowanceANewMessageIsRefusedButAResendIsNot() throws {
        let quota = driver()
        let stored = try storedFromBob(2)
        let fresh = MessageID.random()
        let (verdicts, refused) = try quota.judge([(stored[0], 2), (fresh, 3)], from: bob.identity)
        XCTAssertEqual(verdicts, [nil, .peerQuota])
        XCTAssertEqual(refused.map(\.0), [.peerQuota])
        XCTAssertEqual(refused.first?.1, [fresh])
    }

    /// Free disk under the floor: a correspondent's message is refused with `diskFull`;
    /// with room on the disk it is taken.
    func testUnderTheDiskFloorNothingIsTaken() throws {
        let quota = driver()
        _ = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob.identity, body: "hi", createdAt: 1)],
            sender: me.identity)
        XCTAssertEqual(quota.standing(of: bob.identity), .correspondent, "written to")
        host.free = 0
        XCTAssertEqual(try quota.judge([(.random(), 10)], from: bob.identity).verdicts, [.diskFull])
        host.free = 1 << 40
        XCTAssertEqual(try quota.judge([(.random(), 10)], from: bob.identity).verdicts, [nil])
    }

    /// The store cannot count what bob keeps: the judgement throws (the caller stores and
    /// acknowledges none and closes the session), nothing is refused on the wire, and the
    /// strangers' rate is not taken from; once the store counts again, it judges again.
    func testACountThatFailsTakesNothing() throws {
        let quota = driver()
        let counts = quota.store
        quota.store = UncountableQuotaStore(counts)
        XCTAssertThrowsError(try quota.judge([(.random(), 5)], from: bob.identity)) { error in
            XCTAssertEqual(
                error as? StoreError, .io(path: "parley.sqlite", reason: "injected: the count cannot be read"))
        }
        XCTAssertNil(quota.cache.strangerIntake, "the strangers' rate was not taken from")
        XCTAssertNil(quota.cache.perPeer[bob.identity], "a failed count is not cached as nothing")
        quota.store = counts
        XCTAssertEqual(try quota.judge([(.random(), 5)], from: bob.identity).verdicts, [nil])
        XCTAssertNotNil(quota.cache.strangerIntake)
    }

    /// The peer refused our message: recorded, told to the user, and still queued.
    func testAPeersRefusalIsRecordedAndTheMessageStaysQueued() throws {
        let quota = driver()
        let sent = try store.enqueue(
            [NewOutgoingMessage(id: .random(), recipient: bob.identity, body: "too much", createdAt: 1)],
            sender: me.identity)[0]
        quota.refusedByPeer([sent.id], by: bob.identity, reason: .peerQuota)
        XCTAssertEqual(host.refused.map(\.0), [sent.id])
        XCTAssertEqual(host.refused.map(\.1), [.peerQuota])
        XCTAssertEqual(try store.pendingRecipients(), [bob.identity: 1], "still queued for the next session")
        quota.refusedByPeer([.random()], by: bob.identity, reason: .peerQuota)
        XCTAssertEqual(host.refused.count, 1, "an id that is not ours changes nothing")
    }
}

/// Stands in for the node: the free disk the test says, the events the driver emits.
final class QuotaTestHost: ReceiveQuotaHost {
    var free: Int? = 1 << 40
    var refused: [(MessageID, RefusalReason)] = []
    /// The name the log shows for a peer (a peer's own choice; nil: its key's start).
    var name: String?
    func displayName(of key: IdentityPublicKey) -> String { name ?? String(key.hex.prefix(8)) }
    func freeDiskBytes() -> Int? { free }
    func emit(_ e: NodeEvent) {
        if case .messageRefused(let m, let reason) = e { refused.append((m.id, reason)) }
    }
}
