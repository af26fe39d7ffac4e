import Foundation
import NIOCore
import ParleyControlProtocol
import ParleyStore

/// One local client on the control socket: newline-delimited JSON-RPC 2.0.
///
/// Hostile-input rules: a line longer than `ControlLimits.maxLineBytes` is answered
/// with `lineTooLong` and the connection closed (nothing of it is kept); a client
/// that sends no complete request for `idleLineTimeoutSeconds` (and is not
/// subscribed) is closed; a subscriber that does not read its notifications is cut
/// off with a notice once its backlog passes the limits.
final class ControlConnection: ChannelInboundHandler, NodeObserver {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let node: Node
    private let dispatcher: ControlDispatcher
    private let onClose: (ControlConnection) -> Void
    private var context: ChannelHandlerContext?
    private var lines = LineBuffer()
    private var idleTimer: Scheduled<Void>?
    private var subscribed = false
    private var filterIdentity: String?
    private var backlogBytes = 0
    private var backlogCount = 0
    private var closing = false
    /// messages.send with wait: message id -> (request id, timer)
    private var waiters: [String: (JSONRPCID?, Scheduled<Void>)] = [:]
    private static let encoder: JSONEncoder = {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        return e
    }()

    init(node: Node, info: DaemonRuntimeInfo, onClose: @escaping (ControlConnection) -> Void) {
        self.node = node
        self.dispatcher = ControlDispatcher(node: node, info: info)
        self.onClose = onClose
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        armIdleTimer()
    }

    private func armIdleTimer() {
        idleTimer?.cancel()
        guard !subscribed, waiters.isEmpty, let context else { idleTimer = nil; return }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(in: .seconds(Int64(ControlLimits.idleLineTimeoutSeconds))) { [weak self] in
            guard let self, !self.subscribed, self.waiters.isEmpty else { return }
            self.fail(with: .idleTimeout())
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let buf = unwrapInboundIn(data)
        buf.withUnsafeReadableBytes { lines.append($0) }
        while !closing {
            let line: [UInt8]?
            do { line = try lines.popLine() } catch {
                fail(with: .lineTooLong())
                return
            }
            guard let line else { break }
            if line.isEmpty || line.allSatisfy({ $0 == 0x20 || $0 == 0x0d || $0 == 0x09 }) { continue }
            armIdleTimer()
            handleLine(line)
        }
        context.flush()
    }

    private func handleLine(_ line: [UInt8]) {
        switch ControlRequestParser.parse(line: line) {
        case .failure(let error):
            write(JSONRPCResponse(id: ControlRequestParser.requestID(inRejectedLine: line), error: error))
        case .success(let request):
            let reply = dispatcher.handle(request) { [weak self] messageID, timeoutMs, rid in
                self?.waitForDelivery(messageID, timeoutMs: timeoutMs, requestID: rid)
            }
            switch reply {
            case .now(let response):
                if !request.isNotification { write(response) }
            case .deferred:
                break
            case let .subscribe(filter, response):
                filterIdentity = filter
                if !subscribed {
                    subscribed = true
                    node.addObserver(self)
                }
                idleTimer?.cancel()
                write(response)
            }
        }
    }

    private func waitForDelivery(_ messageID: String, timeoutMs: Int, requestID: JSONRPCID?) {
        guard let context else { return }
        node.addObserver(self)
        let timer = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(timeoutMs))) { [weak self] in
            guard let self, let w = self.waiters.removeValue(forKey: messageID) else { return }
            self.write(JSONRPCResponse(id: w.0, error: .sendTimeout(id: messageID, timeoutMs: timeoutMs)))
            self.context?.flush()
            if !self.subscribed && self.waiters.isEmpty { self.node.removeObserver(self); self.armIdleTimer() }
        }
        waiters[messageID] = (requestID, timer)
        idleTimer?.cancel()
    }

    // MARK: Node events

    func node(_ node: Node, didEmit event: NodeEvent) {
        if case .messageDelivered(let m) = event, let w = waiters.removeValue(forKey: m.id) {
            w.1.cancel()
            write(.success(id: w.0, result: MessagesSendResult(message: node.messageInfo(m))))
            if !subscribed && waiters.isEmpty { node.removeObserver(self); armIdleTimer() }
        }
        guard subscribed else { context?.flush(); return }
        let notification: JSONRPCNotification?
        do {
            switch event {
            case .messageReceived(let m):
                guard filterIdentity == nil || filterIdentity == m.sender || filterIdentity == m.room else { notification = nil; break }
                notification = try JSONRPCNotification(event: MessageReceivedEvent(message: node.messageInfo(m)))
            case .messageDelivered(let m):
                guard filterIdentity == nil || filterIdentity == m.recipient else { notification = nil; break }
                notification = try JSONRPCNotification(event: MessageDeliveredEvent(
                    id: m.id, to: Node.fingerprint(ofHex: m.recipient), deliveredAt: Int(m.deliveredAt ?? 0)))
            case .peerOnline(let id), .peerOffline(let id):
                guard filterIdentity == nil || filterIdentity == id,
                      let rec = try? node.store.peer(identity: id) else { notification = nil; break }
                let info = node.peerInfo(rec)
                if case .peerOnline = event {
                    notification = try JSONRPCNotification(event: PeerOnlineEvent(peer: info))
                } else {
                    notification = try JSONRPCNotification(event: PeerOfflineEvent(peer: info))
                }
            case .keyChanged(let change):
                notification = try JSONRPCNotification(event: PeerKeyChangedEvent(
                    name: change.displayName, oldFingerprint: Node.fingerprint(ofHex: change.oldIdentity),
                    newFingerprint: Node.fingerprint(ofHex: change.newIdentity), address: change.address,
                    safetyNumber: node.safetyNumber(with: change.newIdentity)))
            case .roomUpdated(let room):
                guard filterIdentity == nil || filterIdentity == room.id else { notification = nil; break }
                notification = try JSONRPCNotification(event: RoomUpdatedEvent(room: node.roomInfo(room)))
            }
        } catch {
            notification = nil
        }
        if let notification { writeNotification(notification) }
        context?.flush()
    }

    private func writeNotification(_ n: JSONRPCNotification) {
        guard let context, !closing else { return }
        guard let data = try? Self.encoder.encode(n) else { return }
        // A subscriber that stopped reading must not make the daemon grow.
        if !context.channel.isWritable,
           backlogCount + 1 > ControlLimits.maxSubscriptionBacklogNotifications
            || backlogBytes + data.count > ControlLimits.maxSubscriptionBacklogBytes {
            cutOffSlowSubscriber()
            return
        }
        send(data)
    }

    private func cutOffSlowSubscriber() {
        guard let context, !closing else { return }
        closing = true
        node.log.warning("control client too slow; subscription cut off", ["backlog": "\(backlogCount)"])
        if let n = try? JSONRPCNotification(event: SubscriptionClosedEvent.tooSlow()),
           let data = try? Self.encoder.encode(n) {
            send(data)
        }
        let channel = context.channel
        context.flush()
        // Close once the notice is written; if the client never reads, after a second regardless.
        context.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    // MARK: Writing

    private func write(_ response: JSONRPCResponse) {
        guard let data = try? Self.encoder.encode(response) else { return }
        send(data)
    }

    private func send(_ data: Data) {
        guard let context else { return }
        var buf = context.channel.allocator.buffer(capacity: data.count + 1)
        buf.writeBytes(data)
        buf.writeInteger(UInt8(ascii: "\n"))
        let size = buf.readableBytes
        backlogBytes += size
        backlogCount += 1
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [weak self] _ in
            self?.backlogBytes -= size
            self?.backlogCount -= 1
        }
        context.write(wrapOutboundOut(buf), promise: promise)
    }

    private func fail(with error: JSONRPCError) {
        guard let context, !closing else { return }
        closing = true
        write(JSONRPCResponse(id: nil, error: error))
        context.flush()
        context.close(promise: nil)
    }

    /// Sent by the server to clients when the daemon shuts down.
    func close() {
        context?.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        for (_, w) in waiters { w.1.cancel() }
        waiters.removeAll()
        node.removeObserver(self)
        self.context = nil
        onClose(self)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}
