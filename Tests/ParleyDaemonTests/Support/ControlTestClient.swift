import Foundation
import NIOCore
import NIOEmbedded
import XCTest

@testable import ParleyDaemon

/// A `ControlConnection` in an `EmbeddedChannel`: lines in, answers out, on a whole node
/// (`InProcessNode`: real store and key files in a temporary directory). Everything runs on one `EmbeddedEventLoop` whose time the test moves.
final class ControlTestClient {
    let loop: EmbeddedEventLoop
    let node: InProcessNode
    let journal: EventJournal
    let channel: EmbeddedChannel
    private(set) var closedByServer = false

    init(loop: EmbeddedEventLoop = EmbeddedEventLoop()) throws {
        self.loop = loop
        let node = try InProcessNode(name: "alice", loop: loop, clock: LoopClock(loop: loop))
        self.node = node
        journal = EventJournal(node: node.node)
        journal.start()
        node.node.addObserver(journal)
        channel = EmbeddedChannel(loop: loop)
        let connection = ControlConnection(node: node.node, info: DaemonRuntimeInfo(), journal: journal) {
            [weak self] _ in
            self?.closedByServer = true
        }
        try channel.pipeline.syncOperations.addHandler(connection)
        try channel.connect(to: SocketAddress(unixDomainSocketPath: "/tmp/parley-test.sock")).wait()
    }

    /// Writes `text` as ONE read of the connection.
    func write(_ text: String) throws {
        try channel.writeInbound(channel.allocator.buffer(string: text))
        loop.run()
    }

    func write(bytes: [UInt8]) throws {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
        loop.run()
    }

    /// Every complete line the daemon wrote so far, decoded.
    func answers() throws -> [[String: Any]] {
        var text: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            text += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return try text.split(separator: UInt8(ascii: "\n")).map { line in
            try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], "not an object: \(line)")
        }
    }

    /// The raw lines the daemon wrote so far (to compare bytes).
    func rawLines() throws -> [String] {
        var text: [UInt8] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            text += buffer.readBytes(length: buffer.readableBytes) ?? []
        }
        return text.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    }

    /// What each write the daemon made carried (one `write` system call each), in order.
    func writes() throws -> [String] {
        var out: [String] = []
        while var buffer = try channel.readOutbound(as: ByteBuffer.self) {
            out.append(buffer.readString(length: buffer.readableBytes) ?? "")
        }
        return out
    }

    static func request(_ id: Int?, _ method: String, _ params: [String: Any]? = nil) -> String {
        var object: [String: Any] = ["jsonrpc": "2.0", "method": method]
        if let id { object["id"] = id }
        if let params { object["params"] = params }
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}

extension Dictionary where Key == String, Value == Any {
    var errorCode: Int? { (self["error"] as? [String: Any])?["code"] as? Int }
    var errorMessage: String? { (self["error"] as? [String: Any])?["message"] as? String }
    var result: [String: Any]? { self["result"] as? [String: Any] }
    var id: Int? { self["id"] as? Int }
}
