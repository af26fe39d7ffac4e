import ParleyCore

/// A lightweight Parley peer speaking the real protocol over one TCP connection: the
/// XX handshake with a card (`SessionHandshake`), frames (`Frame`), and application
/// records sealed in Noise transport messages. Blocking; every wait has a deadline.
final class NoiseClient: @unchecked Sendable {
    let socket: Socket
    private var transport: SessionTransport
    private var inbound: [UInt8] = []
    private var records = RecordStreamDecoder()
    private(set) var remoteName: String

    private init(socket: Socket, established: SessionHandshake.Established) {
        self.socket = socket
        self.transport = established.transport
        self.remoteName = established.remoteCard.displayName
    }

    /// Connects to a daemon on 127.0.0.1:`port` and completes the handshake as initiator.
    static func connect(port: Int, as me: BenchIdentity, deadline: Deadline) throws(BenchError) -> NoiseClient {
        let socket = try Socket.tcp(port: port, deadline: deadline)
        var hs = me.handshake(role: .initiator)
        var pending: [UInt8] = []
        do {
            try socket.sendAll(try Frame.encode(try hs.start()), deadline: deadline)
            let m2 = try readFrame(socket, &pending, deadline: deadline)
            guard case .established(let final, let est) = try hs.receive(m2) else {
                throw BenchError.protocolError("responder did not finish in message 2")
            }
            if let final { try socket.sendAll(try Frame.encode(final), deadline: deadline) }
            let client = NoiseClient(socket: socket, established: est)
            client.inbound = pending
            return client
        } catch let e as BenchError {
            throw e
        } catch {
            throw .protocolError("handshake: \(error)")
        }
    }

    /// Sends records in one Noise message (or as few as the size limit allows).
    func send(_ list: [AppRecord], deadline: Deadline) throws(BenchError) {
        var enc = RecordStreamEncoder()
        for r in list { enc.append(r) }
        var out: [UInt8] = []
        do {
            for chunk in enc.drainChunks() { out += try Frame.encode(try transport.seal(chunk)) }
        } catch {
            throw .protocolError("seal: \(error)")
        }
        try socket.sendAll(out, deadline: deadline)
    }

    /// The next application record from the daemon.
    func nextRecord(deadline: Deadline) throws(BenchError) -> AppRecord {
        while true {
            do {
                if let r = try records.next() { return r }
            } catch {
                throw .protocolError("record: \(error)")
            }
            let message = try Self.readFrame(socket, &inbound, deadline: deadline)
            do { records.append(try transport.open(message)) } catch { throw .protocolError("open: \(error)") }
        }
    }

    /// Sends ping(n) and waits for pong(n): the first encrypted reply of a session.
    func pingPong(_ n: UInt64, deadline: Deadline) throws(BenchError) {
        try send([.ping(n)], deadline: deadline)
        while true {
            switch try nextRecord(deadline: deadline) {
            case .pong(let m) where m == n: return
            case .ping(let m): try send([.pong(m)], deadline: deadline)
            case .close(let reason, let text): throw .protocolError("daemon closed the session: \(reason) \(text)")
            default: continue
            }
        }
    }

    /// Answers every ping that has arrived, without waiting: what keeps an idle session
    /// alive (the daemon closes a peer it has not heard from in `deadAfter`).
    /// Returns false once the daemon has closed the connection.
    func answerPings() throws(BenchError) -> Bool {
        while socket.readable(withinMilliseconds: 0) {
            let n = try socket.receive(into: &inbound, deadline: Deadline(seconds: 1))
            if n == 0 { return false }
            while let message = try Self.takeFrame(&inbound) {
                do { records.append(try transport.open(message)) } catch { throw .protocolError("open: \(error)") }
            }
            while true {
                let r: AppRecord?
                do { r = try records.next() } catch { throw .protocolError("record: \(error)") }
                guard let r else { break }
                if case .ping(let m) = r { try send([.pong(m)], deadline: Deadline(seconds: 5)) }
                if case .close = r { return false }
            }
        }
        return true
    }

    /// Reads what has arrived (without waiting), hands each record to `reply` and sends
    /// back, in one Noise message, the records it returns. What a peer serving many
    /// sessions from one thread needs (`PeerSwarm`). Returns false once the daemon closed.
    func serveArrived(_ reply: (AppRecord) -> [AppRecord]) throws(BenchError) -> Bool {
        var out: [AppRecord] = []
        var open = true
        while socket.readable(withinMilliseconds: 0) {
            let n = try socket.receive(into: &inbound, deadline: Deadline(seconds: 1))
            if n == 0 {
                open = false
                break
            }
            while let message = try Self.takeFrame(&inbound) {
                do { records.append(try transport.open(message)) } catch { throw .protocolError("open: \(error)") }
            }
            while true {
                let r: AppRecord?
                do { r = try records.next() } catch { throw .protocolError("record: \(error)") }
                guard let r else { break }
                if case .close = r { open = false }
                out += reply(r)
            }
        }
        if !out.isEmpty && open { try send(out, deadline: Deadline(seconds: 5)) }
        return open
    }

    func close() { socket.close() }

    // MARK: Framing

    /// One frame's payload off `buffer` if complete. Lengths are checked as parleyd does.
    static func takeFrame(_ buffer: inout [UInt8]) throws(BenchError) -> [UInt8]? {
        guard buffer.count >= Frame.headerLength else { return nil }
        let length = Int(buffer[0]) << 8 | Int(buffer[1])
        guard length >= Frame.minPayloadLength else { throw .protocolError("empty frame") }
        guard buffer.count >= Frame.headerLength + length else { return nil }
        let payload = Array(buffer[Frame.headerLength..<Frame.headerLength + length])
        buffer.removeFirst(Frame.headerLength + length)
        return payload
    }

    static func readFrame(_ socket: Socket, _ buffer: inout [UInt8], deadline: Deadline) throws(BenchError) -> [UInt8] {
        while true {
            if let f = try takeFrame(&buffer) { return f }
            let n = try socket.receive(into: &buffer, deadline: deadline)
            if n == 0 { throw .io("daemon closed the connection") }
        }
    }
}
