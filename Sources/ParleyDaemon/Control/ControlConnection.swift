import Foundation
import NIOCore
import ParleyControlProtocol
import ParleyNodeCore
import ParleyStore

/// One local client on the control socket: newline-delimited JSON-RPC 2.0.
///
/// Hostile-input rules: a line longer than `ControlLimits.maxLineBytes` is answered
/// with `lineTooLong` and the connection closed (nothing of it is kept); a client
/// that sends no complete request for `idleLineTimeoutSeconds` (and is not
/// subscribed) is closed; a subscriber that does not read its notifications is cut
/// off with a notice once its backlog passes the limits.
final class ControlConnection: ChannelInboundHandler, EventJournalSubscriber {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let node: Node
    private let journal: EventJournal
    private let dispatcher: ControlDispatcher
    private let onClose: (ControlConnection) -> Void
    private var context: ChannelHandlerContext?
    private var lines = LineBuffer()
    private var idleTimer: Scheduled<Void>?
    private var subscribed = false
    private var filterIdentity: String?
    /// A resuming subscription still sending stored events; live ones wait in `live`.
    private var replay: Replay?
    /// A subscriber's lines written (or held) and not yet taken by the socket.
    private var backlog = Backlog()
    /// Lines encoded and not yet written: this turn's, written out in one write at its end,
    /// and those held for the disk (ControlOutput.swift).
    private var output = ControlOutput()
    private var closing = false
    /// Answers still to come (`Reply.later`), by token: what stops each if the client
    /// goes away first. While any is outstanding the idle timeout is off.
    private var waits = OutstandingAnswers()
    /// Answers held for the disk beyond which the client's requests are not read: a
    /// client pipelining during a slow sync cannot make the daemon grow without bound. The
    /// same figure as the low mark of unread answers (`ControlServer.unreadAnswersWaterMark`).
    static let maxHeldBytes = 1 << 20

    private struct Backlog {
        var bytes = 0
        var count = 0
    }

    private struct Replay {
        /// The last event id sent (or skipped by the filter).
        var next: Int64
        /// The newest event id when the subscription started: live events come after it.
        let through: Int64
        var live: [(line: [UInt8], peer: String?)] = []
        /// This page's lines are held for the disk: `releaseDurable` sends the next page
        /// once they are out.
        var waitsForDisk = false
    }

    init(node: Node, info: DaemonRuntimeInfo, journal: EventJournal, onClose: @escaping (ControlConnection) -> Void) {
        self.node = node
        self.journal = journal
        self.dispatcher = ControlDispatcher(node: node, info: info)
        self.onClose = onClose
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        armIdleTimer()
    }

    private func armIdleTimer() {
        idleTimer?.cancel()
        guard !subscribed, waits.isEmpty, let context else {
            idleTimer = nil
            return
        }
        idleTimer = context.eventLoop.assumeIsolated().scheduleTask(
            in: .seconds(Int64(ControlLimits.idleLineTimeoutSeconds))
        ) { [weak self] in
            guard let self, !self.subscribed, self.waits.isEmpty else { return }
            self.fail(with: .idleTimeout())
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let buf = unwrapInboundIn(data)
        buf.withUnsafeReadableBytes { lines.append($0) }
        var requests: [[UInt8]] = []
        var overflow = false
        while true {
            let line: [UInt8]?
            do { line = try lines.popLine() } catch {
                overflow = true
                break
            }
            guard let line else { break }
            if line.isEmpty || line.allSatisfy({ $0 == 0x20 || $0 == 0x0d || $0 == 0x09 }) { continue }
            requests.append(line)
        }
        if !requests.isEmpty { armIdleTimer() }
        handleLines(requests)
        if overflow {
            fail(with: .lineTooLong())
            return
        }
        // The answers go out at the end of the turn, with every other line of it, in one write.
        output.readThisTurn = true
        flushAtEndOfTurn()
    }

    /// After the turn's write: a client that sends requests but does not read the answers
    /// stops being read until it has taken what is queued, so its answers cannot pile up
    /// in the daemon (resumed in channelWritabilityChanged); so does one whose answers wait
    /// for a slow disk (resumed by releaseDurable).
    private func pauseReadingIfBehind(_ context: ChannelHandlerContext) {
        if !context.channel.isWritable {
            setReading(false, context)
        } else if output.heldBytes > Self.maxHeldBytes {
            output.readingPausedForDisk = true
            setReading(false, context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { setReading(true, context) }
        context.fireChannelWritabilityChanged()
    }

    private func setReading(_ on: Bool, _ context: ChannelHandlerContext) {
        context.channel.setOption(ChannelOptions.autoRead, value: on).whenFailure { _ in }
        if on { context.read() }
    }

    /// Answers the complete lines of one read in order. Consecutive `messages.send`
    /// requests (without `wait`) are stored in one transaction: pipelining clients get
    /// group commit, and every answer still comes after its message is on disk.
    private func handleLines(_ lines: [[UInt8]]) {
        // Each line is parsed, and its params decoded, once, here; a run of sends is then
        // stored together and every other request handled on its own.
        let requests = lines.map(Self.decode)
        var i = 0
        while i < requests.count && !closing {
            var sends: [(id: JSONRPCID?, params: MessagesSendParams)] = []
            var j = i
            while j < requests.count, case .success(let r) = requests[j], !r.request.isNotification,
                let p = r.call.immediateSend
            {
                sends.append((r.request.id, p))
                j += 1
            }
            if sends.count > 1 {
                for answer in dispatcher.sendBatch(sends) {
                    switch answer {
                    case .sent(let success):
                        // Written by hand, as `CanonicalJSON.encode` would after a dynamic
                        // cast to find that out (~1,200 instructions an answer).
                        append { success.writeCanonicalJSON(into: &$0) }
                    case .failed(let response):
                        write(response)
                    }
                }
                i = j
            } else {
                handle(requests[i])
                i += 1
            }
        }
    }

    /// A line as a request with its params decoded, or the error that answers it (with
    /// the request's id when the line had a readable one).
    private struct DecodedRequest {
        let request: JSONRPCRequest
        let call: ControlCall
    }

    private static func decode(_ line: [UInt8]) -> Result<DecodedRequest, DecodeFailure> {
        // The per-message request first, without a JSON tree (`MessagesSendLine`); any line
        // it does not fully understand takes the general route, which gives every error.
        if let send = MessagesSendLine.parse(line) {
            switch send.params {
            case .success(let params):
                return .success(
                    DecodedRequest(
                        request: JSONRPCRequest(id: send.id, method: ControlMethod.messagesSend),
                        call: .messagesSend(params)))
            case .failure(let error):
                return .failure(DecodeFailure(id: send.id, error: error, isNotification: send.id == nil))
            }
        }
        switch ControlRequestParser.parse(line: line) {
        case .failure(let error):
            return .failure(
                DecodeFailure(
                    id: ControlRequestParser.requestID(inRejectedLine: line), error: error, isNotification: false))
        case .success(let request):
            if request.method == ControlMethod.filesSend || request.method == ControlMethod.filesOpen {
                return .failure(
                    DecodeFailure(
                        id: request.id, error: ControlDispatcher.descriptorSocketOnly(),
                        isNotification: request.isNotification))
            }
            switch ControlCall.decode(request) {
            case .success(let call): return .success(DecodedRequest(request: request, call: call))
            case .failure(let error):
                return .failure(DecodeFailure(id: request.id, error: error, isNotification: request.isNotification))
            }
        }
    }

    private struct DecodeFailure: Error {
        let id: JSONRPCID?
        let error: JSONRPCError
        /// A notification is not answered, not even with an error (JSON-RPC 2.0).
        let isNotification: Bool
    }

    private func handle(_ decoded: Result<DecodedRequest, DecodeFailure>) {
        switch decoded {
        case .failure(let failure):
            if !failure.isNotification { write(JSONRPCResponse(id: failure.id, error: failure.error)) }
        case .success(let r):
            let request = r.request
            let reply = dispatcher.handle(r.call, id: request.id)
            switch reply {
            case .now(let response):
                if !request.isNotification { write(response) }
            case let .typed(id, result):
                if !request.isNotification { writeSuccess(id: id, result: result) }
            case .later(let start):
                waitForAnswer(start, requestID: request.id, answers: !request.isNotification)
            case let .subscribe(filter, since):
                let response = subscribe(filter: filter, since: since, requestID: request.id)
                if !request.isNotification { write(response) }
                startReplay()
            }
        }
    }

    /// Starts (or re-filters) the subscription. With `since`, the events after it up to
    /// the current newest are replayed (`startReplay`) before live ones: registering and
    /// taking the newest id happen together on the event loop, so nothing is missed or
    /// sent twice at the boundary.
    private func subscribe(filter: String?, since: Int?, requestID: JSONRPCID?) -> JSONRPCResponse {
        if replay != nil {
            return JSONRPCResponse(
                id: requestID, error: .invalidRequest("a replay of stored events is still in progress"))
        }
        if let since, let problem = journal.resumeProblem(since: since) {
            return JSONRPCResponse(id: requestID, error: problem)
        }
        filterIdentity = filter
        let head = journal.lastEventID
        if !subscribed {
            subscribed = true
            journal.addSubscriber(self)
        }
        idleTimer?.cancel()
        if let since, Int64(since) < head { replay = Replay(next: Int64(since), through: head) }
        return .success(id: requestID, result: MessagesSubscribeResult(subscribed: true, lastEventId: Int(head)))
    }

    /// Sends one page of stored events, then the next once the client has taken it; at
    /// the end, the live events that arrived meanwhile.
    private func startReplay() {
        guard var r = replay, let context, !closing else { return }
        // Pruned while replaying (the client was far behind and slow): say so rather than skip.
        guard journal.prunedThrough <= r.next else {
            closeSubscription(
                code: .eventsExpired,
                message: "events after \(r.next) were pruned during the replay; "
                    + "catch up with messages.list and subscribe again")
            return
        }
        let page: (items: [(line: [UInt8], peer: String?)], scannedThrough: Int64)
        do {
            page = try journal.replay(after: r.next, through: r.through)
        } catch {
            closeSubscription(code: .internalError, message: "cannot read stored events: \(error)")
            return
        }
        for item in page.items where passes(item.peer) { send(item.line) }
        r.next = max(page.scannedThrough, r.next + 1)
        if r.next >= r.through {
            replay = nil
            for item in r.live where passes(item.peer) { writeNotification(item.line) }
            flushAtEndOfTurn()
            return
        }
        replay = r
        continueReplayOnceTaken()
    }

    /// The next page of a replay once the client has taken this one (written to a socket
    /// that accepted it), so a resuming client cannot make the daemon hold more than a page.
    private func continueReplayOnceTaken() {
        guard let context, replay != nil else { return }
        if output.isHolding {
            replay?.waitsForDisk = true  // releaseDurable comes back here
            return
        }
        if let written = flushNow() {
            written.assumeIsolated().whenComplete { [weak self] _ in self?.startReplay() }
        } else {
            context.eventLoop.assumeIsolated().execute { [weak self] in self?.startReplay() }
        }
    }

    private func passes(_ peer: String?) -> Bool {
        filterIdentity == nil || peer == nil || peer == filterIdentity
    }

    /// A `Reply.later`: starts its wait, and answers (once) when it ends, unless the
    /// request was a notification (JSON-RPC answers none).
    private func waitForAnswer(
        _ start: (@escaping (ControlDispatcher.Answer) -> Void) -> ControlDispatcher.Cancel, requestID: JSONRPCID?,
        answers: Bool
    ) {
        idleTimer?.cancel()
        let token = waits.next()
        var answered = false
        let cancel = start { [weak self] answer in
            guard let self, !answered else { return }
            answered = true
            self.waits.remove(token)
            if answers {
                switch answer {
                case .result(let result): self.writeSuccess(id: requestID, result: result)
                case .response(let response): self.write(response)
                }
            }
            self.flushAtEndOfTurn()
            self.armIdleTimer()
        }
        // Answered at once (nothing to wait for): nothing to keep.
        if !answered { waits.add(token, cancel) }
    }

    // MARK: Journal events (subscription)

    func journal(_ journal: EventJournal, deliver line: [UInt8], peer: String?) {
        guard subscribed, !closing else { return }
        if var r = replay {
            // Held until the stored events before them are out; bounded like the backlog.
            guard r.live.count < ControlLimits.maxSubscriptionBacklogNotifications else {
                cutOffSlowSubscriber()
                return
            }
            r.live.append((line, peer))
            replay = r
            return
        }
        guard passes(peer) else { return }
        writeNotification(line)
    }

    func journalDeliveredBatch(_ journal: EventJournal) {
        guard subscribed, !closing, replay == nil else { return }
        // With the rest of the turn's lines, in one write.
        flushAtEndOfTurn()
    }

    private func writeNotification(_ data: [UInt8]) {
        guard let context, !closing else { return }
        // A subscriber that stopped reading must not make the daemon grow.
        if !context.channel.isWritable,
            backlog.count + 1 > ControlLimits.maxSubscriptionBacklogNotifications
                || backlog.bytes + data.count > ControlLimits.maxSubscriptionBacklogBytes
        {
            cutOffSlowSubscriber()
            return
        }
        send(data)
    }

    private func cutOffSlowSubscriber() {
        guard !closing else { return }
        node.log.warning("control client too slow; subscription cut off", ["backlog": "\(backlog.count)"])
        closeSubscription(SubscriptionClosedEvent.tooSlow())
    }

    private func closeSubscription(code: ControlErrorCode, message: String) {
        closeSubscription(SubscriptionClosedEvent(code: code.rawValue, message: message))
    }

    /// Sends `subscription.closed` and closes the connection.
    private func closeSubscription(_ event: SubscriptionClosedEvent) {
        guard let context, !closing else { return }
        closing = true
        replay = nil
        if let n = try? JSONRPCNotification(event: event) { sendEncoded(n) }
        let channel = context.channel
        flushNow()
        // Give a client that wakes up a few seconds to read up to the notice; nothing more is
        // queued meanwhile (closing is set), so memory stays bounded; then close regardless.
        context.eventLoop.scheduleTask(in: .seconds(10)) { channel.close(promise: nil) }
    }

    // MARK: Writing

    private func writeSuccess<R: Encodable & Sendable>(id: JSONRPCID?, result: R) {
        if !sendEncoded(JSONRPCTypedSuccess(id: id, result: result)) {
            write(JSONRPCResponse(id: id, error: .internalError("cannot encode the result")))
        }
    }

    private func write(_ response: JSONRPCResponse) {
        sendEncoded(response)
    }

    /// Encodes `value` straight into the connection's output (no array of its own per
    /// answer; a `messages.send` answer is written by hand) as one line.
    @discardableResult
    private func sendEncoded<T: Encodable>(_ value: T) -> Bool {
        append { try CanonicalJSON.encode(value, appendingTo: &$0) }
    }

    /// A line already encoded (a notification the journal wrote once for every subscriber).
    private func send(_ line: [UInt8]) {
        append { $0.append(contentsOf: line) }
    }

    /// Adds one line to the output: behind a commit not on disk yet (or behind lines that
    /// are), held in order until `releaseDurable`; otherwise to this turn's write. Only a
    /// subscriber's lines count in its backlog: it is sent what it did not ask for, while
    /// the answers to a client's own requests are bounded by its reading.
    @discardableResult
    private func append(_ write: (inout [UInt8]) throws -> Void) -> Bool {
        guard context != nil else { return false }
        let unsynced = node.store.unsyncedCommit
        let wasHolding = output.isHolding
        guard let size = output.append(heldBehind: unsynced, accounted: subscribed, write) else { return false }
        if subscribed {
            backlog.bytes += size
            backlog.count += 1
        }
        if !wasHolding, let first = output.firstHeldCommit { waitForDisk(through: first) }
        return true
    }

    /// Writes this turn's lines once the turn's other work is done: answers, notifications
    /// and released lines of one event-loop turn leave in a single write.
    private func flushAtEndOfTurn() {
        // Nothing to write (the turn's lines are held for the disk) and no read to check
        // after: no task either.
        guard !output.flushScheduled, !output.ready.isEmpty || output.readThisTurn, let context else { return }
        output.flushScheduled = true
        context.eventLoop.assumeIsolated().execute { [weak self] in
            guard let self else { return }
            self.output.flushScheduled = false
            self.flushNow()
            if self.output.readThisTurn, let context = self.context {
                self.output.readThisTurn = false
                self.pauseReadingIfBehind(context)
            }
        }
    }

    /// Writes and flushes what is ready, as one buffer: one write system call. The future
    /// completes once the socket took it (nil: nothing to write).
    @discardableResult
    private func flushNow() -> EventLoopFuture<Void>? {
        guard let context, !output.ready.isEmpty else { return nil }
        var buffer = context.channel.allocator.buffer(capacity: output.ready.count)
        let accounted = output.takeReady { buffer.writeBytes($0) }
        guard accounted.count > 0 else {
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            return nil
        }
        let promise = context.eventLoop.makePromise(of: Void.self)
        promise.futureResult.assumeIsolated().whenComplete { [weak self] _ in
            guard let self else { return }
            self.backlog.bytes -= accounted.bytes
            self.backlog.count -= accounted.count
            // A cut-off subscriber is closed as soon as it has read up to the notice.
            if self.closing && self.backlog.count == 0 { self.context?.close(promise: nil) }
        }
        context.writeAndFlush(wrapOutboundOut(buffer), promise: promise)
        return promise.futureResult
    }

    private func waitForDisk(through ticket: UInt64) {
        node.store.whenDurable(through: ticket) { [weak self] in self?.releaseDurable() }
    }

    /// Moves the held lines whose commits are on disk to this turn's write, in order.
    private func releaseDurable() {
        guard let context else { return }
        output.releaseDurable { node.store.isDurable($0) }
        if let first = output.firstHeldCommit { waitForDisk(through: first) }
        if replay?.waitsForDisk == true, !output.isHolding {
            replay?.waitsForDisk = false
            continueReplayOnceTaken()
        } else {
            flushAtEndOfTurn()
        }
        if output.readingPausedForDisk, output.heldBytes <= Self.maxHeldBytes {
            output.readingPausedForDisk = false
            if context.channel.isWritable { setReading(true, context) }
        }
    }

    private func fail(with error: JSONRPCError) {
        guard let context, !closing else { return }
        closing = true
        // Straight out after this turn's lines, ahead of any line still held for the disk:
        // the connection closes.
        output.append(heldBehind: nil, accounted: false, ignoringHeld: true) {
            try CanonicalJSON.encode(JSONRPCResponse(id: nil, error: error), appendingTo: &$0)
        }
        flushNow()
        context.close(promise: nil)
    }

    /// Sent by the server to clients when the daemon shuts down.
    func close() {
        context?.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        idleTimer?.cancel()
        waits.cancelAll()
        output.dropHeld()
        replay = nil
        journal.removeSubscriber(self)
        self.context = nil
        onClose(self)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

/// A control connection's answers still to come: what stops each wait, by token.
private struct OutstandingAnswers {
    private var cancels: [Int: ControlDispatcher.Cancel] = [:]
    private var lastToken = 0

    var isEmpty: Bool { cancels.isEmpty }

    mutating func next() -> Int {
        lastToken += 1
        return lastToken
    }

    mutating func add(_ token: Int, _ cancel: @escaping ControlDispatcher.Cancel) { cancels[token] = cancel }
    mutating func remove(_ token: Int) { cancels[token] = nil }

    /// The client went away: every wait stops, none answers.
    mutating func cancelAll() {
        let all = cancels.values
        cancels.removeAll()
        for cancel in all { cancel() }
    }
}
