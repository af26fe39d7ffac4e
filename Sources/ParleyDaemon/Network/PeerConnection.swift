import NIOCore
import ParleyCore
import ParleyNodeCore

/// What a `PeerConnection` reports to its owner. Every call happens on the
/// connection's event loop, which is the node's loop.
protocol PeerConnectionDelegate: AnyObject {
    /// The handshake finished and the peer's card verified. The delegate decides
    /// whether to keep the session (it calls `close` to refuse).
    func connectionEstablished(_ connection: PeerConnection)
    func connection(_ connection: PeerConnection, received chats: [ChatRecord])
    func connection(_ connection: PeerConnection, acknowledged ids: [MessageID])
    /// The peer's user read these of our messages. Reported after the acks of the same read.
    func connection(_ connection: PeerConnection, receivedReadReceipts ids: [MessageID])
    /// The peer did not store these of our chats (docs/PROTOCOL.md "refused").
    func connection(_ connection: PeerConnection, refused ids: [MessageID], reason: RefusalReason)
    func connection(_ connection: PeerConnection, receivedCard card: [UInt8])
    /// The peer's `listenPorts` record: where it can be dialled back.
    func connection(_ connection: PeerConnection, announcedListenPorts ports: [UInt16])
    /// Address gossip (0x21, 0x22) and the dial-back probe (0x23, 0x24).
    func connection(_ connection: PeerConnection, receivedAddressRecord record: SignedAddressRecord)
    func connection(_ connection: PeerConnection, receivedContactTags tags: ContactTags)
    func connection(_ connection: PeerConnection, receivedDialBackRequest request: DialBackRequest)
    func connection(_ connection: PeerConnection, receivedDialBackResult result: DialBackResult)
    /// Room operations and room chats of one read, in arrival order.
    func connection(_ connection: PeerConnection, receivedRoomTraffic records: [RoomTraffic])
    /// Edits, deletes and reactions of one read, after its chats.
    func connection(_ connection: PeerConnection, receivedActions actions: [MessageActionRecord])
    func connection(_ connection: PeerConnection, receivedStatus status: PresenceStatus)
    /// A file record (docs/PROTOCOL.md "Files"), as it arrives: chunks are written as they come.
    func connection(_ connection: PeerConnection, receivedFile record: FileRecord)
    func connectionBecameWritable(_ connection: PeerConnection)
    func connectionClosed(_ connection: PeerConnection, error: Error?)
}

/// One TCP connection to another node: runs Parley's handshake, then carries
/// application records sealed in Noise transport messages.
///
/// Outgoing records are coalesced: everything sent during one event-loop tick
/// leaves as one Noise message (or as few as the 64 KiB limit allows) in one write.
final class PeerConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        /// Not started: how to make the handshake once the channel is active.
        case idle(() -> SessionHandshake)
        case handshaking(SessionHandshake)
        case established(SessionTransport)
        case closed
    }

    let direction: ConnectionDirection
    private(set) var remoteAddress: String = "?"
    private(set) var established: SessionHandshake.Established?
    /// The verified peer's identity, once the handshake finished.
    var remoteIdentityKey: IdentityPublicKey? { established?.remoteCard.identityKey }
    /// What the peer's handshake announced it understands (empty before the handshake).
    var remoteFeatures: ProtocolFeatures { established?.remoteFeatures ?? [] }

    weak var delegate: PeerConnectionDelegate?
    private var state: State
    /// How long the handshake may take, and its timer while it runs.
    private var handshakeDeadline: HandshakeDeadline
    private var context: ChannelHandlerContext?

    /// Records queued to leave at the end of this event-loop tick.
    private var outgoing = OutgoingRecords()
    private var decoder = RecordStreamDecoder()
    /// What this read brought, handed to the node at its end (`channelReadComplete`).
    private var batch = ReadBatch()
    /// True while reading from the peer is paused because our answers to it are not being
    /// taken (its receive window is shut): see `pauseReadingIfOutboundIsFull`.
    private(set) var readingPaused = false

    /// When the peer last sent and we last wrote, on the node's injected clock.
    private var activity: LinkActivity
    // Liveness, read by the node's keepalive tick.
    var lastReceived: NIODeadline { activity.lastReceived }
    var lastSent: NIODeadline { activity.lastSent }

    /// The reason the peer gave in its close record, if it sent one.
    private(set) var remoteCloseReason: CloseReason?

    /// Who waits for the peer to show it kept the session (`confirmPeerKeepsSession`).
    private var keptProbe = KeptSessionProbe()

    init(
        direction: ConnectionDirection, handshakeTimeout: TimeAmount,
        now: @escaping () -> NIODeadline = NIODeadline.now,
        makeHandshake: @escaping () -> SessionHandshake
    ) {
        self.direction = direction
        self.activity = LinkActivity(now: now)
        self.handshakeDeadline = HandshakeDeadline(timeout: handshakeTimeout)
        self.state = .idle(makeHandshake)
    }

    var isWritable: Bool { context?.channel.isWritable ?? false }
    var isOpen: Bool { if case .closed = state { return false } else { return context != nil } }

    // MARK: Channel events

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard case .idle(let make) = state else { return }
        remoteAddress = context.channel.remoteAddress.map(Self.describe) ?? "?"
        var hs = make()
        handshakeDeadline.timer = context.eventLoop.assumeIsolated().scheduleTask(in: handshakeDeadline.timeout) {
            [weak self] in
            guard let self, case .handshaking = self.state else { return }
            self.fail(SessionHandshakeError.timedOut)
        }
        if direction == .outbound {
            do {
                let first = try hs.start()
                state = .handshaking(hs)
                writeFrame(first, context: context)
                context.flush()
            } catch {
                fail(error)
            }
        } else {
            state = .handshaking(hs)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = unwrapInboundIn(data)
        activity.received()
        switch state {
        case .handshaking(var hs):
            do {
                switch try hs.receive(Array(message.readableBytesView)) {
                case .send(let reply):
                    state = .handshaking(hs)
                    writeFrame(reply, context: context)
                    context.flush()
                    pauseReadingIfOutboundIsFull(context: context)
                case .established(let final, let est):
                    handshakeDeadline.cancel()
                    self.established = est
                    // Optional records are read only from a peer that announced them.
                    decoder.peerFeatures = est.remoteFeatures
                    state = .established(est.transport)
                    if let final {
                        writeFrame(final, context: context)
                        context.flush()
                    }
                    delegate?.connectionEstablished(self)
                }
            } catch {
                fail(error)
            }
        case .established(var transport):
            do {
                // Decrypted straight into the record stream's buffer.
                // Decrypted from where NIO read it into the record stream's buffer.
                try message.withUnsafeReadableBytes { m in try transport.open(m, into: &decoder) }
            } catch {
                // Tampered, replayed or reordered: the session cannot continue. No close
                // record: these bytes may not come from the peer at all (anyone on the
                // path can inject a segment), so the node answers them with nothing.
                state = .established(transport)
                fail(error)
                return
            }
            state = .established(transport)
            do {
                // After the peer's close nothing more is read (docs/PROTOCOL.md, "Closing").
                while remoteCloseReason == nil, let record = try decoder.next() { handle(record) }
            } catch {
                failWithProtocolError(error)
            }
        case .idle, .closed:
            break
        }
    }

    private func handle(_ record: AppRecord) {
        if keptProbe.kept != nil { keptProbe.heard = keptProbe.heard || !Self.isClose(record) }
        switch record {
        case .chat(let c): batch.chats.append(c)
        case .ack(let ids): batch.acks.append(contentsOf: ids)
        case .readReceipt(let ids): batch.readReceipts.append(contentsOf: ids)
        case let .refused(reason, ids): batch.refusals.append((reason, ids))
        case .ping(let n): batch.pong = n
        case .pong: break
        case .cardUpdate(let card): delegate?.connection(self, receivedCard: card)
        case .close(let reason, _):
            remoteCloseReason = reason
            closeChannel()
        case .roomOperation(let op): appendRoomTraffic(.operation(op))
        case .roomChat(let c): appendRoomTraffic(.chat(c))
        case .messageAction(let a): batch.actions.append(a)
        case .status(let s): delegate?.connection(self, receivedStatus: s)
        case .listenPorts(let ports): delegate?.connection(self, announcedListenPorts: ports)
        case .file(let record): delegate?.connection(self, receivedFile: record)
        case .addressRecord(let r): delegate?.connection(self, receivedAddressRecord: r)
        case .contactTags(let t): delegate?.connection(self, receivedContactTags: t)
        case .dialBackRequest(let r): delegate?.connection(self, receivedDialBackRequest: r)
        case .dialBackResult(let r): delegate?.connection(self, receivedDialBackResult: r)
        case .roomMessage(let m): appendRoomTraffic(.signed(m))
        case .roomHave(let h): appendRoomTraffic(.have(h))
        case .roomCard(let c): appendRoomTraffic(.card(c))
        case .roomOpsHave(let h): appendRoomTraffic(.operationsHave(h))
        case .unknown: break
        }
    }

    /// Room traffic and acknowledgements reach the node in the order the peer sent them,
    /// though each is batched per read: the node's answer to a room record can depend on
    /// what the peer acknowledged before it. A member that acknowledges an operation and
    /// then sends an operation summary without it (it dropped it) lacks it again; read in
    /// the other order, the summary would find the operation still queued for that member
    /// (nothing new to queue) and the acknowledgement would then remove it, so it would
    /// never be sent again. So a room record read after acknowledgements first delivers
    /// the batch so far (its room traffic all came before those acknowledgements).
    private func appendRoomTraffic(_ traffic: RoomTraffic) {
        if !batch.acks.isEmpty { deliverRoomTrafficThenAcks() }
        batch.roomTraffic.append(traffic)
    }

    /// Delivers the read's room traffic, then its acknowledgements: every room record
    /// still in the batch came before every acknowledgement in it (`appendRoomTraffic`).
    private func deliverRoomTrafficThenAcks() {
        if let traffic = drain(&batch.roomTraffic) {
            delegate?.connection(self, receivedRoomTraffic: traffic)
        }
        if let acks = drain(&batch.acks) {
            delegate?.connection(self, acknowledged: acks)
        }
    }

    /// The batch's items of one kind, leaving that list empty with its capacity kept; nil
    /// when the read brought none.
    private func drain<T>(_ items: inout [T]) -> [T]? {
        guard !items.isEmpty else { return nil }
        defer { items.removeAll(keepingCapacity: true) }
        return items
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if keptProbe.heard, remoteCloseReason == nil, let kept = keptProbe.kept {
            keptProbe = KeptSessionProbe()
            kept()
        }
        if let pong = batch.pong {
            batch.pong = nil
            send(.pong(pong))
        }
        // Batches: the node stores every chat of this read in one transaction.
        if let chats = drain(&batch.chats) {
            delegate?.connection(self, received: chats)
        }
        if let actions = drain(&batch.actions) {
            delegate?.connection(self, receivedActions: actions)
        }
        deliverRoomTrafficThenAcks()
        if let refusals = drain(&batch.refusals) {
            for (reason, ids) in refusals { delegate?.connection(self, refused: ids, reason: reason) }
        }
        if let receipts = drain(&batch.readReceipts) {
            delegate?.connection(self, receivedReadReceipts: receipts)
        }
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            resumeReading(context: context)
            delegate?.connectionBecameWritable(self)
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Backpressure

    /// A peer that sends (pings, chats) but does not read our answers (pongs, acks) would
    /// otherwise make them pile up in NIO's pending writes without bound. Once those are over
    /// the channel's high water mark (`PeerConnection.outboundWaterMark`) we stop reading
    /// from it; `channelWritabilityChanged` resumes when they drain below the low mark. What
    /// is queued per connection is then at most the high mark plus the answers to one read
    /// (bounded by NIO's receive buffer), the same rule as the control socket's.
    private func pauseReadingIfOutboundIsFull(context: ChannelHandlerContext) {
        guard !readingPaused, !context.channel.isWritable else { return }
        readingPaused = true
        context.channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in }
    }

    private func resumeReading(context: ChannelHandlerContext) {
        guard readingPaused else { return }
        readingPaused = false
        context.channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
        context.read()
    }

    /// The peer channels' write buffer water marks: a few full Noise messages may be queued
    /// before reading from the peer pauses (NIO's default marks, named here because the
    /// bound per connection depends on them).
    static let outboundWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 32 * 1024, high: 64 * 1024)

    func channelInactive(context: ChannelHandlerContext) {
        markClosed(error: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        fail(error)
    }

    // MARK: Did the peer keep the session?

    /// In Noise XX the initiator finishes the handshake by *sending* the third message, so
    /// it is "established" before the responder has read that message and made its trust
    /// decision (blocked, key change held, a name clash, no room). A refusal arrives as a
    /// close record right after. Someone waiting on a dial (`parley connect`) must not be
    /// told "connected" in that window: this sends a ping and calls `kept` once any record
    /// but a close comes back (the pong at the latest: the peer answers in order, after its
    /// decision). If the session closes first, `kept` is never called and the close's
    /// reason is what the waiter hears.
    private static func isClose(_ record: AppRecord) -> Bool {
        if case .close = record { return true }
        return false
    }

    func confirmPeerKeepsSession(probe: UInt64, _ kept: @escaping () -> Void) {
        guard case .established = state else { return }
        keptProbe = KeptSessionProbe(kept: kept)
        send(.ping(probe))
    }

    // MARK: Sending

    /// Queues a record; it leaves at the end of this event-loop tick together with
    /// everything else queued meanwhile.
    func send(_ record: AppRecord) {
        guard case .established = state else { return }
        outgoing.encoder.append(record)
        scheduleFlush()
    }

    /// Queues a `fileChunk` record whose data `fill` writes where it will be sealed from
    /// (`RecordStreamEncoder.appendFileChunk`): the sender `pread`s the source there. If
    /// `fill` throws, nothing is queued. On a session not (or no longer) established, `fill`
    /// is not called.
    func sendFileChunk<E: Error>(
        _ transfer: TransferID, index: UInt64, length: Int, _ fill: (UnsafeMutableRawBufferPointer) throws(E) -> Void
    ) throws(E) {
        guard case .established = state else { return }
        try outgoing.encoder.appendFileChunk(transfer, index: index, length: length, fill)
        scheduleFlush()
    }

    private func scheduleFlush() {
        guard !outgoing.flushScheduled, let loop = context?.eventLoop else { return }
        outgoing.flushScheduled = true
        loop.assumeIsolated().execute { [weak self] in self?.flushNow() }
    }

    /// Seals and writes every queued record now.
    func flushNow() {
        outgoing.flushScheduled = false
        guard let context, case .established(var transport) = state else { return }
        let plaintext = outgoing.encoder.pendingByteCount
        guard plaintext > 0 else { return }
        // One buffer for every frame of this flush, each message sealed where it is sent
        // from: no per-message plaintext piece, ciphertext array or copy into NIO's buffer.
        let messages = (plaintext + WireLimits.maxPlaintextPerMessage - 1) / WireLimits.maxPlaintextPerMessage
        let overhead = Frame.headerLength + NoiseConstants.tagLength
        var out = context.channel.allocator.buffer(capacity: plaintext + messages * overhead)
        do {
            try outgoing.encoder.drain { piece in
                let length = piece.count + NoiseConstants.tagLength
                out.writeInteger(UInt16(length))
                try out.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { free in
                    try transport.seal(piece, into: UnsafeMutableRawBufferPointer(rebasing: free[0..<length]))
                    return length
                }
            }
            context.write(wrapOutboundOut(out), promise: nil)
            state = .established(transport)
            activity.sent()
            context.flush()
            pauseReadingIfOutboundIsFull(context: context)
        } catch {
            state = .established(transport)
            fail(error)
        }
    }

    private func writeFrame(_ message: [UInt8], context: ChannelHandlerContext) {
        var buf = context.channel.allocator.buffer(capacity: Frame.headerLength + message.count)
        buf.writeInteger(UInt16(message.count))
        buf.writeBytes(message)
        context.write(wrapOutboundOut(buf), promise: nil)
    }

    // MARK: Closing

    /// Says goodbye with a reason, then closes.
    func close(reason: CloseReason, text: String = "") {
        guard isOpen else { return }
        if case .established = state {
            send(.close(reason, text))
            flushNow()
        }
        closeChannel()
    }

    private func closeChannel() {
        guard let context else { return }
        context.close(promise: nil)
    }

    private func fail(_ error: Error) {
        guard isOpen else { return }
        failure = error
        closeChannel()
    }

    private(set) var failure: Error?

    /// A malformed record of a known type, or one over the size limit: the transport is
    /// intact, so the peer is told why (`close(protocolError)`, docs/PROTOCOL.md "Record
    /// stream") before the connection closes. The text names the record type and the rule
    /// broken, never any payload bytes.
    private func failWithProtocolError(_ error: AppRecordError) {
        guard isOpen else { return }
        failure = error
        close(reason: .protocolError, text: error.description)
    }

    /// Closes the TCP connection without a close record: for a peer presumed dead
    /// (docs/PROTOCOL.md "Liveness"), which would not read one, and which must not take
    /// the end of the session for a goodbye if it is in fact alive. Records already queued
    /// (a pong, acks) still leave first: a node that was itself busy for the whole silence
    /// (a long batch of room operations) owes them to a peer that did nothing wrong.
    func drop() {
        guard isOpen else { return }
        flushNow()
        closeChannel()
    }

    private func markClosed(error: Error?) {
        if case .closed = state { return }
        handshakeDeadline.cancel()
        state = .closed
        delegate?.connectionClosed(self, error: failure ?? error)
        context = nil
    }

    static func describe(_ address: SocketAddress) -> String {
        switch address {
        case .v4: return "\(address.ipAddress ?? "?"):\(address.port ?? 0)"
        case .v6: return "[\(address.ipAddress ?? "?")]:\(address.port ?? 0)"
        case .unixDomainSocket: return "unix"
        }
    }
}

extension PeerConnectionDelegate {
    // Gossip and dial-back are optional for a delegate (the unit tests' recorders).
    func connection(_ connection: PeerConnection, receivedAddressRecord record: SignedAddressRecord) {}
    func connection(_ connection: PeerConnection, receivedContactTags tags: ContactTags) {}
    func connection(_ connection: PeerConnection, receivedDialBackRequest request: DialBackRequest) {}
    func connection(_ connection: PeerConnection, receivedDialBackResult result: DialBackResult) {}
}

/// What one read from the peer brought, handed to the node at the read's end in batches
/// (the node stores every chat of a read in one transaction).
private struct ReadBatch {
    var chats: [ChatRecord] = []
    var actions: [MessageActionRecord] = []
    var roomTraffic: [RoomTraffic] = []
    var acks: [MessageID] = []
    var refusals: [(RefusalReason, [MessageID])] = []
    var readReceipts: [MessageID] = []
    /// The value of the last ping of this read: the pings of one read get one pong
    /// (docs/PROTOCOL.md "ping / pong"), so a peer's ping burst cannot make us write as much
    /// as it sends.
    var pong: UInt64?
}

/// Records queued to leave together at the end of this event-loop tick.
private struct OutgoingRecords {
    var encoder = RecordStreamEncoder()
    var flushScheduled = false
}

/// When the peer last sent something and we last wrote, for liveness (`NodeLink`).
private struct LinkActivity {
    /// The node's monotonic clock (injected, so in-process tests move it by hand).
    let now: () -> NIODeadline
    private(set) var lastReceived: NIODeadline
    private(set) var lastSent: NIODeadline

    init(now: @escaping () -> NIODeadline) {
        self.now = now
        lastReceived = now()
        lastSent = lastReceived
    }

    mutating func received() { lastReceived = now() }
    mutating func sent() { lastSent = now() }
}

/// The handshake's time limit and its timer while it runs.
private struct HandshakeDeadline {
    let timeout: TimeAmount
    var timer: Scheduled<Void>?

    mutating func cancel() {
        timer?.cancel()
        timer = nil
    }
}

/// Someone waiting for the peer to show it kept the session: `kept` is called once any
/// record but a close came in a read (`heard`), at the read's end.
private struct KeptSessionProbe {
    var kept: (() -> Void)?
    var heard = false
}
