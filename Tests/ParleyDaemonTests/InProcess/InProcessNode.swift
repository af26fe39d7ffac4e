import Foundation
import NIOCore
import NIOEmbedded
import ParleyConfiguration
import ParleyCore
import ParleyNodeCore
import ParleyStore

@testable import ParleyDaemon

/// The node's clocks tied to an `EmbeddedEventLoop`'s virtual time, so a test that moves
/// the loop also moves what the node's decisions see, and the other way round.
final class LoopClock: NodeClock, @unchecked Sendable {
    let loop: EmbeddedEventLoop
    /// Wall time at the loop's time zero.
    var wallAtZero: Int64 = 1_750_000_000_000

    init(loop: EmbeddedEventLoop) { self.loop = loop }

    func monotonicNow() -> MonotonicInstant { MonotonicInstant(nanoseconds: loop.now.uptimeNanoseconds) }
    func wallMilliseconds() -> Int64 { wallAtZero + Int64(loop.now.uptimeNanoseconds / 1_000_000) }
}

/// Jitter-free randomness: backoff delays are their lowest value.
struct LowestRandom: RandomSource {
    func uniform(below bound: UInt32) -> UInt32 { 0 }
}

/// A whole node (real SQLite store and key files in a temporary directory) on an
/// `EmbeddedEventLoop`, with events recorded.
final class InProcessNode: NodeObserver {
    let node: Node
    let directory: String
    private(set) var events: [NodeEvent] = []

    init(
        name: String, loop: EmbeddedEventLoop, clock: LoopClock, options: NodeOptions = NodeOptions(),
        log: Logger = testLogger()
    ) throws {
        directory = NSTemporaryDirectory() + "parley-inprocess-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let (keys, _) = try KeyFiles.loadOrCreate(stateDirectory: directory)
        let store = try Store(directory: directory)
        let card = try Card.issue(
            identity: keys.identity, noiseKey: keys.noiseStatic.publicKey, displayName: name,
            hostName: name + "-host", issuedAt: UInt64(clock.wallMilliseconds() / 1000), sequence: 1)
        node = Node(
            loop: loop, store: store, keys: keys, card: card, options: options, log: log,
            networkKey: nil, clock: clock, random: LowestRandom())
        node.ownIdentity.stateDirectory = directory
        node.addObserver(self)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func node(_ node: Node, didEmit event: NodeEvent) { events.append(event) }

    var identity: IdentityPublicKey { node.myIdentityKey }
}

/// A new, empty directory of its own for a test's store (`prefix-UUID` under the temporary
/// directory, mode 0700 as the daemon's state directory); the test removes it in tearDown.
func makeTestDirectory(_ prefix: String) throws -> String {
    let directory = NSTemporaryDirectory() + "\(prefix)-\(UUID().uuidString)"
    try FileManager.default.createDirectory(
        atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    return directory
}

/// The one place the tests build a daemon logger: quiet unless a test wants the lines.
func testLogger() -> Logger {
    let level = SharedLogLevel(.error)
    return Logger(label: "test") { _ in
        ParleyLogHandler(format: .human, level: level, output: LogOutput(sink: { _ in }))
    }
}

/// Two nodes joined by a pair of `EmbeddedChannel`s: bytes written by one side are handed
/// to the other by `exchange()`, so a test decides what crosses the "wire" and when
/// (WireGuard's two devices in one process). Everything runs on one virtual-time loop.
final class InProcessLink {
    let loop: EmbeddedEventLoop
    let initiator: EmbeddedChannel
    let responder: EmbeddedChannel
    let initiatorConnection: PeerConnection
    let responderConnection: PeerConnection

    /// `a` dials `b`, for `dialTarget` if given (with the fingerprint an advertisement
    /// claimed for it).
    init(
        from a: InProcessNode, to b: InProcessNode, loop: EmbeddedEventLoop, dialTarget: DialTargetKey? = nil,
        expectedFingerprint: String? = nil
    ) throws {
        self.loop = loop
        initiatorConnection = a.node.makeConnection(
            direction: .outbound, dialedAddress: dialTarget, expectedFingerprint: expectedFingerprint)
        responderConnection = b.node.makeConnection(direction: .inbound, dialedAddress: nil)
        initiator = EmbeddedChannel(loop: loop)
        responder = EmbeddedChannel(loop: loop)
        try initiator.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
        try initiator.pipeline.syncOperations.addHandler(initiatorConnection)
        try responder.pipeline.syncOperations.addHandler(NoiseFrameDecoder())
        try responder.pipeline.syncOperations.addHandler(responderConnection)
        try responder.connect(to: SocketAddress(ipAddress: "127.0.0.2", port: 40_000)).wait()
        try initiator.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 7744)).wait()
    }

    enum Direction { case both, initiatorToResponder, responderToInitiator }

    /// Frames written but not yet handed over, per direction, in order.
    private var heldForward: [ByteBuffer] = []
    private var heldBackward: [ByteBuffer] = []

    /// Runs the loop and counts the frames the initiator has written and not yet handed over.
    func initiatorFramesHeld() throws -> Int {
        loop.run()
        while let buf = try initiator.readOutbound(as: ByteBuffer.self) { heldForward.append(buf) }
        return heldForward.count
    }

    /// Moves bytes until neither side has anything more to say. A direction that is not
    /// allowed holds its bytes back (a stalled link: TCP never loses a frame inside a
    /// session, so neither can this) and hands them over, in order, at the next exchange
    /// that allows it. Returns the byte counts handed over in each direction.
    @discardableResult
    func exchange(_ allowed: Direction = .both) throws -> (forward: Int, backward: Int) {
        var forward = 0
        var backward = 0
        while true {
            loop.run()
            while let buf = try initiator.readOutbound(as: ByteBuffer.self) { heldForward.append(buf) }
            while let buf = try responder.readOutbound(as: ByteBuffer.self) { heldBackward.append(buf) }
            var moved = false
            if allowed != .responderToInitiator, !heldForward.isEmpty {
                let frames = heldForward
                heldForward.removeAll()
                for buf in frames where responder.isActive {
                    forward += buf.readableBytes
                    try responder.writeInbound(buf)
                }
                moved = true
            }
            if allowed != .initiatorToResponder, !heldBackward.isEmpty {
                let frames = heldBackward
                heldBackward.removeAll()
                for buf in frames where initiator.isActive {
                    backward += buf.readableBytes
                    try initiator.writeInbound(buf)
                }
                moved = true
            }
            if !moved { return (forward, backward) }
        }
    }

    /// Hands everything the initiator has written so far to the responder as ONE read (TCP
    /// coalescing several writes into one segment), then exchanges as usual.
    func exchangeCoalescingForward() throws {
        _ = try initiatorFramesHeld()
        guard var joined = heldForward.first else {
            try exchange()
            return
        }
        for buf in heldForward.dropFirst() { joined.writeImmutableBuffer(buf) }
        heldForward.removeAll()
        if responder.isActive { try responder.writeInbound(joined) }
        try exchange()
    }

    /// Moves virtual time for both nodes (their timers fire as the loop passes them).
    func advance(_ d: TimeAmount) {
        loop.advanceTime(by: d)
    }

    /// Moves virtual time past `DeliveryMarkFold.flushDelay`: acknowledged deliveries that
    /// found no transaction to ride on are marked (and `message.delivered` sent).
    func writeDeliveryMarks() { advance(DeliveryMarkFold.flushDelay) }
}
