import NIOCore
import ParleyControlProtocol
import ParleyCore
import ParleyNodeCore
import ParleyStore

/// The methods whose answer comes later, each as a `Reply.later`: `messages.send` with
/// `wait` (the delivery, a refusal or the timeout) and `peers.connect` with `wait` (the
/// dial's outcome or the timeout). Each answers once; the connection that asked stops the
/// wait (its timer, its observation of the node) if it closes first.
extension ControlDispatcher {
    /// `messages.send` with `wait`: answers with the delivered message, the peer's refusal
    /// (issue 15: waiting longer would only end in a timeout) or `sendTimeout`.
    func awaitDelivery(of messageID: MessageID, timeoutMs: Int, id: JSONRPCID?) -> Reply {
        let node = self.node
        return .later { answer in
            let wait = DeliveryWait(messageID: messageID, node: node) { outcome in
                switch outcome {
                case .delivered:
                    // The delivery mark carries only what changed; the answer shows the whole message.
                    if let m = try? node.store.message(id: messageID, sender: node.myIdentityKey) {
                        answer(.result(MessagesSendResult(message: node.messageInfo(m))))
                    } else {
                        answer(
                            .response(
                                JSONRPCResponse(
                                    id: id,
                                    error: .internalError(
                                        "message \(messageID.hex) was delivered but cannot be read back"))
                            ))
                    }
                case .refused(let reason):
                    answer(.response(JSONRPCResponse(id: id, error: .sendRefused(id: messageID.hex, reason: reason))))
                case .timedOut:
                    answer(
                        .response(JSONRPCResponse(id: id, error: .sendTimeout(id: messageID.hex, timeoutMs: timeoutMs)))
                    )
                }
            }
            wait.start(timeout: .milliseconds(Int64(timeoutMs)))
            return { wait.cancel() }
        }
    }

    /// `peers.connect` with `wait`: answers with the dial's outcome, or `connectTimeout`. A
    /// failed address is no longer dialled (the user was told and decides); after a timeout
    /// it is.
    func awaitDial(_ key: DialTargetKey, address: String, timeoutMs: Int, id: JSONRPCID?) -> Reply {
        let node = self.node
        return .later { answer in
            var answered = false
            var token = 0
            let timer = node.loop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(timeoutMs))) {
                guard !answered else { return }
                answered = true
                node.cancelDialWatch(key, token: token)
                answer(
                    .response(JSONRPCResponse(id: id, error: .connectTimeout(address: address, timeoutMs: timeoutMs))))
            }
            token = node.watchDial(key) { outcome in
                guard !answered else { return }
                answered = true
                timer.cancel()
                switch outcome {
                case .connected(let identity):
                    let peer = (try? node.store.peer(identity: identity)).flatMap { $0 }.map { node.peerInfo($0) }
                    answer(.result(PeersConnectResult(address: address, status: .connected, peer: peer)))
                case .failed(let reason):
                    node.forgetDialTarget(key)
                    answer(
                        .response(
                            JSONRPCResponse(id: id, error: JSONRPCError(.connectFailed, reason + "; not retried"))))
                }
            }
            return {
                guard !answered else { return }
                answered = true
                timer.cancel()
                node.cancelDialWatch(key, token: token)
            }
        }
    }
}

/// One `messages.send --wait`: watches the node's events for its message's delivery or
/// refusal, with a timeout; reports once, then stops watching.
final class DeliveryWait: NodeObserver {
    enum Outcome {
        case delivered
        case refused(reason: String)
        case timedOut
    }

    private let messageID: MessageID
    private let node: Node
    private var report: ((Outcome) -> Void)?
    private var timer: Scheduled<Void>?

    init(messageID: MessageID, node: Node, report: @escaping (Outcome) -> Void) {
        self.messageID = messageID
        self.node = node
        self.report = report
    }

    /// Starts watching (the node holds observers weakly: the timer keeps this alive).
    func start(timeout: TimeAmount) {
        node.addObserver(self)
        timer = node.loop.assumeIsolated().scheduleTask(in: timeout) { [self] in finish(.timedOut) }
    }

    /// The client went away: no answer, nothing kept.
    func cancel() {
        timer?.cancel()
        timer = nil
        report = nil
        node.removeObserver(self)
    }

    func node(_ node: Node, didEmit event: NodeEvent) {
        switch event {
        case let .messageRefused(m, reason) where m.id == messageID:
            finish(.refused(reason: reason.description))
        case .messageDelivered(let d) where d.id == messageID:
            finish(.delivered)
        default:
            break
        }
    }

    private func finish(_ outcome: Outcome) {
        guard let report else { return }
        self.report = nil
        timer?.cancel()
        timer = nil
        node.removeObserver(self)
        report(outcome)
    }
}
