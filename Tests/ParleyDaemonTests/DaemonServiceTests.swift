import Foundation
import Logging
import ParleyConfiguration
import ParleyControlProtocol
import ServiceLifecycle
import ServiceLifecycleTestKit
import XCTest

@testable import ParleyDaemon

/// Collects the lines a daemon logs.
private final class LogLines: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
    func append(_ line: String) {
        lock.lock()
        storage.append(line)
        lock.unlock()
    }
}

/// `Daemon` as a swift-service-lifecycle `Service`: a real daemon in this process (keys,
/// SQLite store, a TCP listener on loopback, the control socket; no mDNS) stopped by the
/// service group's graceful shutdown, as SIGTERM does in parleyd.
final class DaemonServiceTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("parley-daemon-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private var socketPath: String { directory + "/control.sock" }

    private func configuration() -> DaemonConfiguration {
        var configuration = DaemonConfiguration(stateDirectory: directory + "/state", hostName: "test-host")
        configuration.listen = [HostPort("127.0.0.1:0")!]
        configuration.mdnsEnabled = false
        configuration.socketPath = socketPath
        configuration.durability = .normal
        return configuration
    }

    private func daemon(_ configuration: DaemonConfiguration) -> (Daemon, LogLines) {
        let lines = LogLines()
        let level = SharedLogLevel(.info)
        let output = LogOutput(sink: { lines.append($0) })
        let log = Logging.Logger(label: "parleyd") { _ in
            ParleyLogHandler(format: .journald, level: level, output: output)
        }
        return (Daemon(configuration: configuration, reloader: nil, environment: [:], log: log, logLevel: level), lines)
    }

    private struct TimedOut: Error, CustomStringConvertible {
        let what: String
        var description: String { "timed out waiting for \(what)" }
    }

    private func waitUntil(_ what: String, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while !condition() {
            guard ContinuousClock.now < deadline else { throw TimedOut(what: what) }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    func testGracefulShutdownStopsTheDaemonAndRunReturns() async throws {
        let (daemon, lines) = daemon(configuration())
        let socketPath = self.socketPath
        try await testGracefulShutdown { trigger in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await daemon.run() }
                try await waitUntil("the control socket") { FileManager.default.fileExists(atPath: socketPath) }
                XCTAssertTrue(ControlClientProbe.answers(at: socketPath), "the control socket serves requests")
                trigger.triggerGracefulShutdown()
                // run() returns (without throwing) once everything has stopped; a run()
                // that ignores the shutdown loses the race against this timeout.
                group.addTask {
                    try await Task.sleep(for: .seconds(20))
                    throw TimedOut(what: "run() to return after graceful shutdown")
                }
                try await group.next()
                group.cancelAll()
            }
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: socketPath), "the control socket is removed on stop")
        let messages = lines.all
        let listening = try XCTUnwrap(messages.firstIndex { $0.hasPrefix("<6>listening ") }, "\(messages)")
        let stopping = try XCTUnwrap(messages.firstIndex(of: "<6>shutting down"), "\(messages)")
        XCTAssertLessThan(listening, stopping)
    }

    func testAFailedStartThrowsAndSaysWhy() async throws {
        var configuration = configuration()
        // A state directory that is a regular file: the keys cannot be created.
        configuration.stateDirectory = directory + "/not-a-directory"
        XCTAssertTrue(FileManager.default.createFile(atPath: configuration.stateDirectory, contents: Data("x".utf8)))
        let (daemon, lines) = daemon(configuration)
        do {
            try await daemon.run()
            XCTFail("run() returned although the daemon could not start")
        } catch {
            XCTAssertTrue(error is Daemon.StartError, "\(error)")
        }
        XCTAssertEqual(lines.all.filter { $0.hasPrefix("<3>parleyd cannot start: ") }.count, 1, "\(lines.all)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: socketPath))
    }
}

/// One `node.status` request over the control socket.
private enum ControlClientProbe {
    static func answers(at path: String) -> Bool {
        guard let client = try? ControlClient.connect(path: path) else { return false }
        defer { client.close() }
        return (try? client.call(method: "node.status", params: nil)) != nil
    }
}
