import Foundation
import NIOPosix
import XCTest

@testable import ParleyDaemon

#if canImport(Glibc)
    import Glibc
#endif

/// A real AF_UNIX datagram socket standing in for systemd's notify socket.
final class NotifySocketListener {
    let fd: Int32
    /// What to put in $NOTIFY_SOCKET.
    let notifySocket: String
    private let cleanupPath: String?

    /// `name` starting with "@" binds in the abstract namespace, otherwise at a path.
    init(name: String) throws {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(name.utf8)
        let abstract = bytes.first == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + bytes.count + (abstract ? 0 : 1)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(length)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: code) ?? .EIO)
        }
        self.fd = fd
        notifySocket = name
        cleanupPath = abstract ? nil : name
    }

    deinit {
        close(fd)
        if let cleanupPath { unlink(cleanupPath) }
    }

    /// The next datagram, or nil if none is waiting (never blocks: sendto on a local
    /// datagram socket has delivered by the time it returns).
    func receive() -> String? {
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        guard count >= 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }
}

final class SystemdNotifierTests: XCTestCase {
    private func failure(_ result: Result<Void, SystemdNotifyError>) -> SystemdNotifyError? {
        if case .failure(let error) = result { return error }
        return nil
    }

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "parley-notify-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    func testInitFromEnvironment() {
        XCTAssertNil(SystemdNotifier(environment: [:]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "relative/notify"]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "@"]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "vsock:2:1234"]))
        XCTAssertNil(SystemdNotifier(environment: ["NOTIFY_SOCKET": "/" + String(repeating: "x", count: 200)]))
        XCTAssertEqual(
            SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/systemd/notify"])?.socketPath,
            "/run/systemd/notify")
        XCTAssertEqual(
            SystemdNotifier(environment: ["NOTIFY_SOCKET": "@/org/freedesktop/systemd1/notify/1"])?.socketPath,
            "@/org/freedesktop/systemd1/notify/1")
    }

    func testPathSocketReceivesNotifications() throws {
        let listener = try NotifySocketListener(name: directory.appendingPathComponent("notify").path)
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.notifySocket]))

        XCTAssertNoThrow(try notifier.ready(status: "listening on [::]:7744").get())
        XCTAssertEqual(listener.receive(), "READY=1\nSTATUS=listening on [::]:7744")
        XCTAssertNoThrow(try notifier.status("2 peers\nonline").get())
        XCTAssertEqual(listener.receive(), "STATUS=2 peers online")
        XCTAssertNoThrow(try notifier.watchdog().get())
        XCTAssertEqual(listener.receive(), "WATCHDOG=1")
        XCTAssertNoThrow(try notifier.stopping().get())
        XCTAssertEqual(listener.receive(), "STOPPING=1")
        XCTAssertNoThrow(try notifier.notify(["READY=1", "STATUS=custom"]).get())
        XCTAssertEqual(listener.receive(), "READY=1\nSTATUS=custom")
        XCTAssertNil(listener.receive())
    }

    func testReloadingCarriesMonotonicTimestamp() throws {
        let listener = try NotifySocketListener(name: directory.appendingPathComponent("notify").path)
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: listener.notifySocket))
        XCTAssertNoThrow(try notifier.reloading(monotonicMicroseconds: 123_456).get())
        XCTAssertEqual(listener.receive(), "RELOADING=1\nMONOTONIC_USEC=123456")

        let before = SystemdNotifier.monotonicMicroseconds()
        notifier.reloading()
        let after = SystemdNotifier.monotonicMicroseconds()
        let message = try XCTUnwrap(listener.receive())
        let lines = message.split(separator: "\n")
        XCTAssertEqual(lines.first, "RELOADING=1")
        let stamp = try XCTUnwrap(UInt64(lines.last?.dropFirst("MONOTONIC_USEC=".count) ?? ""))
        XCTAssertTrue((before...after).contains(stamp))
    }

    func testAbstractSocketReceivesNotifications() throws {
        let listener = try NotifySocketListener(name: "@parley-test-\(UUID().uuidString)")
        let notifier = try XCTUnwrap(SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.notifySocket]))
        XCTAssertNoThrow(try notifier.ready().get())
        XCTAssertEqual(listener.receive(), "READY=1")
    }

    func testInvalidAssignmentsAreRefusedAndNotSent() throws {
        let listener = try NotifySocketListener(name: directory.appendingPathComponent("notify").path)
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: listener.notifySocket))
        XCTAssertEqual(
            failure(notifier.notify(["READY=1\nSTOPPING=1"])),
            SystemdNotifyError.invalidAssignment("\"READY=1\\nSTOPPING=1\""))
        XCTAssertEqual(failure(notifier.notify(["READY"])), SystemdNotifyError.invalidAssignment("\"READY\""))
        XCTAssertEqual(failure(notifier.notify([])), SystemdNotifyError.invalidAssignment("(empty)"))
        XCTAssertEqual(
            failure(notifier.notify(["STATUS=" + String(repeating: "x", count: 5000)])),
            SystemdNotifyError.messageTooLarge(limit: SystemdNotifier.maxMessageBytes))
        XCTAssertNil(listener.receive())
    }

    func testMissingSocketIsReportedNotThrown() throws {
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: directory.appendingPathComponent("nobody").path))
        XCTAssertEqual(failure(notifier.ready()), SystemdNotifyError.sendFailed(errno: ENOENT))
        XCTAssertTrue(SystemdNotifyError.sendFailed(errno: ENOENT).description.contains("No such file"))
    }

    /// A notify socket nobody reads (systemd stuck) fills after a few datagrams
    /// (`net.unix.max_dgram_qlen`); a blocking send would then stop the event loop that
    /// sends the watchdog pings. Every send returns at once: what does not fit is dropped
    /// with `.socketFull`, and what fitted is there to read. The sends run on their own
    /// thread, waited for at most 10 s; a send still blocked then is woken by closing the
    /// socket.
    func testAFullNotifySocketNeverBlocksTheSender() throws {
        var listener: NotifySocketListener? = try NotifySocketListener(
            name: directory.appendingPathComponent("notify").path)
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: try XCTUnwrap(listener).notifySocket))
        let attempts = 200  // far above any datagram queue length a Linux default allows
        let results = CollectedNotifyResults()
        let done = expectation(description: "every send returned")
        Thread.detachNewThread {
            for _ in 0..<attempts { results.append(notifier.watchdog()) }
            done.fulfill()
        }
        let finished = XCTWaiter.wait(for: [done], timeout: 10) == .completed
        if !finished { listener = nil }  // wakes a send blocked on the full queue
        XCTAssertTrue(finished, "a send blocked on the full notify socket")
        guard finished, let listener else { return }
        let all = results.values
        XCTAssertEqual(all.count, attempts)
        let delivered = all.filter { if case .success = $0 { true } else { false } }.count
        let full = all.filter { if case .failure(.socketFull) = $0 { true } else { false } }.count
        XCTAssertGreaterThan(delivered, 0)
        XCTAssertGreaterThan(full, 0, "the queue filled: the rest were dropped, not waited for")
        XCTAssertEqual(delivered + full, attempts, "no other failure")
        XCTAssertEqual(listener.receive(), "WATCHDOG=1", "what fitted was delivered")
    }

    /// A READY=1 (or watchdog ping) the full socket dropped is sent again from the event
    /// loop once the socket has room (`sendRetryingWhileFull`): dropped for good, systemd
    /// would time the start out and kill the daemon (or miss a watchdog ping). The socket
    /// is filled, the first try fails without blocking, the queue is drained, and READY=1
    /// arrives within a bounded wait.
    func testANotificationTheFullSocketDroppedIsSentAgainOnceThereIsRoom() throws {
        let listener = try NotifySocketListener(name: directory.appendingPathComponent("notify").path)
        let notifier = try XCTUnwrap(SystemdNotifier(socketPath: listener.notifySocket))
        var filled = false
        for _ in 0..<1000 where !filled {
            if case .failure(.socketFull) = notifier.watchdog() { filled = true }
        }
        XCTAssertTrue(filled, "the never-read socket filled")
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let results = CollectedNotifyResults()
        notifier.sendRetryingWhileFull(on: group.next(), delay: .milliseconds(10), { $0.ready() }) {
            results.append($0)
        }
        XCTAssertTrue(results.values.isEmpty, "the first try found the socket full and waits for a retry")
        var ready = false
        let deadline = Date().addingTimeInterval(10)
        while !ready && Date() < deadline {
            // Drains what is queued (the pings), then reads what the retries add.
            if let datagram = listener.receive() {
                ready = datagram == "READY=1"
            } else {
                _ = results.waitForFirst(timeout: 0.01)
            }
        }
        XCTAssertTrue(ready, "READY=1 was sent again once the socket had room")
        XCTAssertTrue(results.waitForFirst(timeout: 10))
        XCTAssertEqual(results.values.count, 1)
        if case .failure(let error) = results.values.first { XCTFail("finished with \(error)") }
    }
}

/// Results collected on another thread.
private final class CollectedNotifyResults: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Result<Void, SystemdNotifyError>] = []
    func append(_ r: Result<Void, SystemdNotifyError>) {
        lock.lock()
        storage.append(r)
        lock.unlock()
    }
    var values: [Result<Void, SystemdNotifyError>] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
    /// Waits at most `timeout` seconds for a first result; true if there is one.
    func waitForFirst(timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while values.isEmpty && Date() < deadline { usleep(1000) }
        return !values.isEmpty
    }
}
