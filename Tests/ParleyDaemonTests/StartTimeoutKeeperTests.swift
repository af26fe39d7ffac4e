import Foundation
import Logging
import ParleyStore
import XCTest

@testable import ParleyDaemon

/// The start-timeout keeper against a real AF_UNIX datagram socket as $NOTIFY_SOCKET, while
/// a real SQLite store of the previous release's shape is upgraded (Tests/fixtures/
/// pre-lean-store, written by make_store.py): EXTEND_TIMEOUT_USEC and the upgrade's STATUS
/// arrive while the migration runs, none once it is done, and a hung upgrade (its count
/// frozen) is extended for the grace only.
final class StartTimeoutKeeperTests: XCTestCase {
    private var directory: String!

    override func setUpWithError() throws {
        directory =
            FileManager.default.temporaryDirectory.appendingPathComponent(
                "parley-keeper-\(UUID().uuidString.prefix(8))"
            ).path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Short limits (the standard ones are seconds to minutes): look every 100 ms, grant 1 s,
    /// stop 1 s after the last progress.
    private let limits = StartTimeoutExtension.Limits(
        tick: .milliseconds(100), idleTick: .milliseconds(20), grant: .seconds(1), stallGrace: .seconds(1),
        maxStartup: .seconds(3600))

    private func writePreLeanStore(messages: Int) throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("fixtures/pre-lean-store/make_store.py")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [script.path, directory + "/" + Store.fileName, "\(messages)"]
        try process.run()
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "make_store.py failed")
    }

    /// Every datagram waiting on the socket, split into their assignments.
    private func drain(_ socket: NotifySocketListener) -> [[String]] {
        var datagrams: [[String]] = []
        while let text = socket.receive() { datagrams.append(text.split(separator: "\n").map(String.init)) }
        return datagrams
    }

    /// Waits (bounded) until `condition` holds, polling every 10 ms.
    private func waitUntil(_ what: String, timeout: Duration, _ condition: () -> Bool) {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("\(what) did not happen within \(timeout)") }
            usleep(10_000)
        }
    }

    func testAnUpgradeIsExtendedWhileItProgressesAndNoLongerOnceItStops() throws {
        try writePreLeanStore(messages: 40_000)
        let socket = try NotifySocketListener(name: directory + "/notify")
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: socket.notifySocket))
        let progress = StoreUpgradeProgress()
        let keeper = StartTimeoutKeeper(
            notifier: notifier, limits: limits, log: Logger(label: "test"),
            work: StartTimeoutKeeper.work(of: progress))
        keeper.start()
        defer { keeper.stop() }

        // The store opens on a thread of its own, as in the daemon the keeper's thread and
        // the opening one are two; this one reads the socket meanwhile, as systemd does (an
        // unread datagram socket blocks its senders after ten datagrams).
        final class Opening: @unchecked Sendable {
            let lock = NSLock()
            var result: Result<Store, Error>?
        }
        let opening = Opening()
        let directory = self.directory!
        let started = ContinuousClock.now
        Thread {
            let result = Result { try Store(directory: directory, upgradeProgress: progress) }
            opening.lock.withLock { opening.result = result }
        }.start()
        var during: [[String]] = []
        waitUntil("the upgrade to finish", timeout: .seconds(300)) {
            during += drain(socket)
            return opening.lock.withLock { opening.result != nil }
        }
        let took = ContinuousClock.now - started
        let store = try XCTUnwrap(opening.lock.withLock { opening.result }).get()
        // A look that began before the upgrade ended may still be sending: once two more
        // looks are done, everything about the upgrade is on the socket.
        let lookAtEnd = keeper.lookCount
        waitUntil("two more looks", timeout: .seconds(30)) {
            during += drain(socket)
            return keeper.lookCount >= lookAtEnd + 2
        }
        during += drain(socket)
        print("StartTimeoutKeeperTests: upgrade took \(took), \(during.count) notifications during it")
        XCTAssertEqual(progress.completedMigrations, 2)
        let extensions = during.filter { $0.first == "EXTEND_TIMEOUT_USEC=1000000" }
        XCTAssertGreaterThanOrEqual(extensions.count, 2, "extended more than once while migrating: \(during)")
        for datagram in extensions {
            XCTAssertEqual(datagram.count, 2, "\(datagram)")
            // lean-messages-v1 is the long one; message-counters-one-row-v1 takes no time.
            XCTAssertTrue(
                datagram.last?.hasPrefix("STATUS=upgrading the message store (lean-messages-v1, 1 of 2), ") == true
                    || datagram.last?.hasPrefix(
                        "STATUS=upgrading the message store (message-counters-one-row-v1, 2 of 2), ") == true,
                "\(datagram)")
            XCTAssertTrue(datagram.last?.hasSuffix(" s so far; it is safe to wait") == true, "\(datagram)")
        }

        // The upgrade is over, the keeper still runs (as it does until READY=1): nothing more.
        let looks = keeper.lookCount
        waitUntil("ten more looks", timeout: .seconds(30)) { keeper.lookCount >= looks + 10 }
        XCTAssertEqual(drain(socket), [], "nothing once the upgrade is done")
        try store.close()
    }

    /// An upgrade whose count stands still (a hang: SQLite waits on a disk or a lock and
    /// runs nothing) is extended for the grace only, says so once, then gets nothing more:
    /// systemd's own timeout ends it.
    func testAHungUpgradeIsExtendedForTheGraceOnlyThenSaysSoOnce() throws {
        let socket = try NotifySocketListener(name: directory + "/notify")
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: socket.notifySocket))
        let frozen = StartTimeoutExtension.Work(description: "upgrading the message store (x-v1, 1 of 1)", progress: 42)
        let keeper = StartTimeoutKeeper(notifier: notifier, limits: limits, log: Logger(label: "test")) { frozen }
        let started = ContinuousClock.now
        keeper.start()
        defer { keeper.stop() }
        var received: [[String]] = []
        waitUntil("the stall to be said", timeout: .seconds(30)) {
            received += drain(socket)
            return received.contains { $0.count == 1 }
        }
        let stalledAfter = ContinuousClock.now - started
        let said = try XCTUnwrap(received.firstIndex { $0.count == 1 })
        XCTAssertEqual(
            received[said],
            [
                "STATUS=upgrading the message store (x-v1, 1 of 1): no progress for 1 s; systemd's start timeout applies again"
            ])
        XCTAssertGreaterThanOrEqual(stalledAfter, limits.stallGrace)
        XCTAssertGreaterThan(said, 2, "extended during the grace: \(received)")
        XCTAssertTrue(received[..<said].allSatisfy { $0.first == "EXTEND_TIMEOUT_USEC=1000000" }, "\(received)")
        let looks = keeper.lookCount
        waitUntil("ten more looks", timeout: .seconds(30)) { keeper.lookCount >= looks + 10 }
        received += drain(socket)
        XCTAssertEqual(Array(received[(said + 1)...]), [], "nothing after the stall was said")
    }

    /// Creating a new store is no upgrade: the keeper says nothing (and nothing after stop()).
    func testANewStoreIsNoUpgradeAndSendsNothing() throws {
        let socket = try NotifySocketListener(name: directory + "/notify")
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: socket.notifySocket))
        let progress = StoreUpgradeProgress()
        let keeper = StartTimeoutKeeper(
            notifier: notifier, limits: limits, log: Logger(label: "test"),
            work: StartTimeoutKeeper.work(of: progress))
        keeper.start()
        let store = try Store(directory: directory, upgradeProgress: progress)  // a new store
        waitUntil("five looks", timeout: .seconds(30)) { keeper.lookCount >= 5 }
        keeper.stop()
        keeper.stop()  // idempotent
        XCTAssertEqual(drain(socket), [])
        try store.close()
    }
}
