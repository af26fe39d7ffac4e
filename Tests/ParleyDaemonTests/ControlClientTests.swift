import Foundation
import ParleyControlProtocol
import XCTest

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `ControlClient` against a real Unix socket served by a scripted in-process server.
final class ControlClientTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        var template = Array("/tmp/parley-ctl-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw XCTSkip("mkdtemp failed: errno \(errno)") }
        directory = String(cString: made)
    }

    override func tearDown() {
        _ = unlink(directory + "/control.sock")
        _ = rmdir(directory)
    }

    private var socketPath: String { directory + "/control.sock" }

    private static let status = NodeStatusResult(
        version: "0.1.0", name: "alice", fingerprint: "aaaa-bbbb", listen: ["0.0.0.0:7777"], peersOnline: 0,
        peersKnown: 1, queued: 0, uptimeSeconds: 5, mdns: .off)

    private static func line<T: Encodable>(_ value: T) -> [UInt8] {
        (try? ControlJSON.line(value)) ?? []
    }

    func testCallSendsOneRequestLineAndDecodesTheResult() throws {
        let received = LockedBox<[UInt8]>([])
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            guard let line = connection.readLine() else { return }
            received.value = line
            let id = try? ControlRequestParser.parse(line: line).get().id
            connection.write(Self.line(JSONRPCResponse.success(id: id, result: Self.status)))
        }
        let client = try ControlClient.connect(path: socketPath)
        XCTAssertEqual(try client.call(NodeStatusParams()), Self.status)
        server.waitUntilFinished()
        let request = try ControlRequestParser.parse(line: received.value).get()
        XCTAssertEqual(request.method, ControlMethod.nodeStatus)
        XCTAssertNotNil(request.id)
    }

    func testDaemonErrorIsThrownAsRemote() throws {
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            guard let line = connection.readLine() else { return }
            let id = try? ControlRequestParser.parse(line: line).get().id
            connection.write(Self.line(JSONRPCResponse(id: id, error: .peerNotFound("carol"))))
        }
        let client = try ControlClient.connect(path: socketPath)
        XCTAssertThrowsError(try client.call(MessagesSendParams(to: "carol", body: "hi"))) { error in
            guard case .remote(let remote)? = error as? ControlClientError else { return XCTFail("\(error)") }
            XCTAssertEqual(remote.knownCode, .peerNotFound)
        }
        server.waitUntilFinished()
    }

    func testNotificationsBeforeTheAnswerAreKeptInOrder() throws {
        let first = MessageDeliveredEvent(id: "m1", to: "bbbb", deliveredAt: 1)
        let second = MessageDeliveredEvent(id: "m2", to: "bbbb", deliveredAt: 2)
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            guard let line = connection.readLine() else { return }
            let id = try? ControlRequestParser.parse(line: line).get().id
            // Notification and answer in one write, as a busy daemon may send them.
            var bytes = Self.line(try? JSONRPCNotification(event: first))
            bytes += Self.line(JSONRPCResponse.success(id: id, result: MessagesSubscribeResult(subscribed: true)))
            connection.write(bytes)
            connection.write(Self.line(try? JSONRPCNotification(event: second)))
        }
        let client = try ControlClient.connect(path: socketPath)
        XCTAssertEqual(try client.call(MessagesSubscribeParams()), MessagesSubscribeResult(subscribed: true))
        XCTAssertEqual(
            try ControlEventPayload(client.readNotification(timeout: .seconds(10))), .messageDelivered(first))
        XCTAssertEqual(
            try ControlEventPayload(client.readNotification(timeout: .seconds(10))), .messageDelivered(second))
        server.waitUntilFinished()
        XCTAssertThrowsError(try client.readNotification()) { error in
            XCTAssertEqual(error as? ControlClientError, .connectionClosed)
        }
    }

    func testConnectionLevelErrorWithNullIDEndsTheCall() throws {
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            connection.write(Self.line(JSONRPCResponse(id: nil, error: .tooManyClients())))
        }
        let client = try ControlClient.connect(path: socketPath)
        XCTAssertThrowsError(try client.call(PeersListParams())) { error in
            guard case .remote(let remote)? = error as? ControlClientError else { return XCTFail("\(error)") }
            XCTAssertEqual(remote.knownCode, .tooManyClients)
        }
        server.waitUntilFinished()
    }

    func testDaemonClosingTheConnectionIsReported() throws {
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            _ = connection.readLine()
        }
        let client = try ControlClient.connect(path: socketPath)
        XCTAssertThrowsError(try client.call(PeersListParams())) { error in
            XCTAssertEqual(error as? ControlClientError, .connectionClosed)
        }
        server.waitUntilFinished()
    }

    func testGarbageFromTheDaemonIsAProtocolViolation() throws {
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            _ = connection.readLine()
            connection.write(Array("this is not json\n".utf8))
        }
        let client = try ControlClient.connect(path: socketPath)
        XCTAssertThrowsError(try client.call(PeersListParams())) { error in
            guard case .protocolViolation? = error as? ControlClientError else { return XCTFail("\(error)") }
        }
        server.waitUntilFinished()
    }

    func testSilentDaemonTimesOut() throws {
        let release = DispatchSemaphore(value: 0)
        let server = try ScriptedUnixServer(path: socketPath) { connection in
            _ = connection.readLine()
            release.wait()  // hold the connection open without answering
        }
        let client = try ControlClient.connect(path: socketPath, callTimeout: .milliseconds(200))
        XCTAssertThrowsError(try client.call(NodeStatusParams())) { error in
            guard case .timedOut? = error as? ControlClientError else { return XCTFail("\(error)") }
        }
        release.signal()
        server.waitUntilFinished()
    }

    func testMissingDaemonGivesAnActionableError() {
        XCTAssertThrowsError(try ControlClient.connect(path: socketPath)) { error in
            guard case .cannotConnect(let path, _)? = error as? ControlClientError else { return XCTFail("\(error)") }
            XCTAssertEqual(path, socketPath)
            let text = String(describing: error)
            XCTAssertTrue(text.contains("cannot connect to parleyd at \(socketPath)"), text)
            XCTAssertTrue(text.contains("No such file"), "the system's reason: \(text)")
        }
    }

    /// A socket in a directory other users can write to (sticky /tmp-like, or group-
    /// writable) may be anyone's: the client does not connect, so nothing it would send
    /// (messages, files) reaches whoever listens there.
    func testASocketInADirectoryOthersCanWriteIsNeverConnectedTo() throws {
        for mode: mode_t in [0o1777, 0o770] {
            XCTAssertEqual(chmod(directory, mode), 0)
            let listener = try Self.listen(at: socketPath)
            defer {
                close(listener)
                _ = unlink(socketPath)
            }
            XCTAssertThrowsError(try ControlClient.connect(path: socketPath)) { error in
                guard case .sharedSocketDirectory(let path, let shared)? = error as? ControlClientError else {
                    return XCTFail("\(error)")
                }
                XCTAssertEqual(path, socketPath)
                XCTAssertEqual(shared, directory)
                XCTAssertTrue(String(describing: error).contains("other users can write to \(directory)"))
            }
            // No connection is waiting to be accepted: the client never connected.
            XCTAssertEqual(fcntl(listener, F_SETFL, O_NONBLOCK), 0)
            let pending = accept(listener, nil, nil)
            XCTAssertLessThan(pending, 0, "the client connected to a socket in a mode \(String(mode, radix: 8)) directory")
            if pending >= 0 { close(pending) }
        }
        XCTAssertEqual(chmod(directory, 0o700), 0)
    }

    /// A listening socket at `path` that no one serves.
    private static func listen(at path: String) throws -> Int32 { try listeningUnixSocket(at: path) }

    func testOverlongSocketPathIsRejectedBeforeConnecting() {
        let path = "/tmp/" + String(repeating: "p", count: 200)
        XCTAssertThrowsError(try ControlClient.connect(path: path)) { error in
            guard case .socketPathTooLong? = error as? ControlClientError else { return XCTFail("\(error)") }
        }
    }
}

/// A value shared between the test and the server thread, guarded by a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T

    init(_ value: T) { stored = value }

    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// One accepted connection on the server side, with blocking line I/O.
struct ServerConnection: Sendable {
    let fd: Int32

    func readLine() -> [UInt8]? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while read(fd, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { return line }
            line.append(byte)
        }
        return nil
    }

    func write(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }
}

/// Listens on a Unix socket, accepts one client on a thread, runs `script` with it and
/// closes it: a real peer for the client, scripted per test.
final class ScriptedUnixServer: Sendable {
    private let finished = DispatchSemaphore(value: 0)

    init(path: String, script: @escaping @Sendable (ServerConnection) -> Void) throws {
        let listener = try listeningUnixSocket(at: path)
        let finished = self.finished
        Thread {
            let connection = accept(listener, nil, nil)
            close(listener)
            if connection >= 0 {
                script(ServerConnection(fd: connection))
                close(connection)
            }
            finished.signal()
        }.start()
    }

    func waitUntilFinished() {
        XCTAssertEqual(finished.wait(timeout: .now() + 30), .success, "server script did not finish")
    }
}

enum ServerSetupError: Error {
    case failed(String, Int32)
}

/// A Unix stream socket bound to `path` and listening (backlog 4), for the scripted and
/// silent servers of these tests.
func listeningUnixSocket(at path: String) throws -> Int32 {
    let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw ServerSetupError.failed("socket", errno) }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0, Glibc.listen(fd, 4) == 0 else {
        close(fd)
        throw ServerSetupError.failed("bind/listen", errno)
    }
    return fd
}
