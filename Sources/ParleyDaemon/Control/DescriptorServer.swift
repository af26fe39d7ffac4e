import Foundation
import NIOCore
import ParleyControlProtocol
import ParleyStore

#if canImport(Glibc)
    import Glibc
#endif

/// The descriptor socket (docs/CONTROL.md "Descriptor socket"): `files.send` with the
/// files as open descriptors, `files.open` answered with one. A side path next to the
/// control socket because SwiftNIO reads stream sockets with read(2), which drops
/// SCM_RIGHTS descriptors (docs/ARCHITECTURE.md "Files by descriptor"). Plain blocking
/// sockets: one accepting thread, one short-lived thread per connection (at most
/// `maxConnections`), one request per connection, every wait bounded by socket timeouts.
/// The same callers as the control socket may connect (`allows`).
final class DescriptorServer: @unchecked Sendable {
    /// Connections served at once; more are refused with `tooManyClients`. A client makes
    /// one per file command; copying a large file keeps one busy for seconds.
    static let maxConnections = 8
    /// Longest request line: a `files.send` of 16 names of 255 bytes is ~6 KiB escaped.
    static let maxRequestBytes = 65_536
    /// How long a client may take to send its request line, or to take the answer.
    static let ioTimeoutSeconds = 10

    let path: String
    private let node: Node
    private let copies: OutgoingCopies
    private let allows: @Sendable (PeerCredentials, Int32) -> Bool
    private let lock = NSLock()
    private var listener: Int32 = -1
    private var active = 0
    private var stopped = false
    private var acceptThread: Thread?

    init(path: String, node: Node, allows: @escaping @Sendable (PeerCredentials, Int32) -> Bool) {
        self.path = path
        self.node = node
        self.copies = OutgoingCopies(stateDirectory: node.ownIdentity.stateDirectory)
        self.allows = allows
    }

    enum StartError: Error, CustomStringConvertible {
        case socket(String, String)
        var description: String {
            switch self {
            case let .socket(path, why): return "cannot listen on the descriptor socket \(path): \(why)"
            }
        }
    }

    /// Binds (0660, like the control socket) and starts accepting.
    func start() throws {
        let bytes = Array(path.utf8)
        var address = sockaddr_un()
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw StartError.socket(path, "the path is too long; use a shorter --socket path")
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw StartError.socket(path, String(cString: strerror(errno))) }
        unlink(path)  // the control socket's check already proved no live daemon owns this directory's sockets
        let old = umask(0o117)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        umask(old)
        guard bound == 0, listen(fd, 16) == 0 else {
            let why = String(cString: strerror(errno))
            close(fd)
            throw StartError.socket(path, why)
        }
        chmod(path, 0o660)
        listener = fd
        let thread = Thread { [self] in acceptLoop(fd) }
        thread.name = "parleyd-descriptors"
        acceptThread = thread
        thread.start()
    }

    /// Stops accepting (connections being served finish on their own, bounded by timeouts).
    func stop() {
        lock.lock()
        stopped = true
        let fd = listener
        listener = -1
        lock.unlock()
        guard fd >= 0 else { return }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
        unlink(path)
    }

    private func acceptLoop(_ fd: Int32) {
        while true {
            // accept4 is not visible from Swift's Glibc; children are spawned with only
            // 0-2 open (ThumbnailMaker), so the moment before FD_CLOEXEC leaks nothing.
            let conn = accept(fd, nil, nil)
            if conn >= 0 { _ = fcntl(conn, F_SETFD, FD_CLOEXEC) }
            if conn < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE {
                    usleep(100_000)  // out of descriptors: let served connections end
                    continue
                }
                return  // closed by stop()
            }
            lock.lock()
            let refuse = stopped || active >= Self.maxConnections
            if !refuse { active += 1 }
            lock.unlock()
            if refuse {
                setTimeouts(conn)
                answer(conn, JSONRPCResponse(id: nil, error: .tooManyClients()), descriptors: [])
                close(conn)
                continue
            }
            let worker = Thread { [self] in
                serve(conn)
                close(conn)
                lock.lock()
                active -= 1
                lock.unlock()
            }
            worker.name = "parleyd-descriptor-call"
            worker.start()
        }
    }

    private func setTimeouts(_ fd: Int32) {
        var tv = timeval(tv_sec: Self.ioTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    private func serve(_ fd: Int32) {
        setTimeouts(fd)
        var cred = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) == 0, allows(cred, fd) else {
            node.log.warning("descriptor socket connection refused: peer credentials not allowed", [:])
            answer(fd, JSONRPCResponse(id: nil, error: JSONRPCError(.notPermitted, "not permitted")), descriptors: [])
            return
        }
        var request = DescriptorRequestReader()
        let line: [UInt8]
        switch request.read(fd) {
        case .failure(let error):
            DescriptorMessage.closeAll(request.descriptors)
            answer(fd, JSONRPCResponse(id: nil, error: error), descriptors: [])
            return
        case .success(let l): line = l
        }
        let descriptors = request.descriptors
        defer { DescriptorMessage.closeAll(descriptors) }
        let parsed: JSONRPCRequest
        switch ControlRequestParser.parse(line: line) {
        case .failure(let error):
            answer(
                fd, JSONRPCResponse(id: ControlRequestParser.requestID(inRejectedLine: line), error: error),
                descriptors: [])
            return
        case .success(let r): parsed = r
        }
        let (response, out) = call(parsed, descriptors: descriptors)
        defer { DescriptorMessage.closeAll(out) }
        answer(fd, response, descriptors: out)
    }

    /// Runs one request: the answer, and the descriptors to attach to it.
    private func call(_ request: JSONRPCRequest, descriptors: [Int32]) -> (JSONRPCResponse, [Int32]) {
        let id = request.id
        let node = self.node
        switch ControlCall.decode(request) {
        case .failure(let error): return (JSONRPCResponse(id: id, error: error), [])
        case .success(.filesSend(let p)):
            guard descriptors.count == p.files.count else {
                return (
                    JSONRPCResponse(
                        id: id,
                        error: .invalidParams(
                            "\(p.files.count) files listed but \(descriptors.count) descriptors attached; "
                                + "attach one open descriptor per entry of \"files\", in order")), []
                )
            }
            // Copied here, on this thread: a large file never holds the event loop.
            var staged: [Node.StagedFile] = []
            for (file, fd) in zip(p.files, descriptors) {
                do {
                    // Hashed as it is copied: the offer needs no second read of it.
                    let (copy, digest) = try copies.copyAndDigest(descriptor: fd, name: file.name)
                    staged.append(
                        Node.StagedFile(copy: copy, name: file.name, mediaType: file.mediaType, digest: digest))
                } catch {
                    for s in staged { copies.remove(s.copy) }
                    return (JSONRPCResponse(id: id, error: ControlDispatcher.rpcError(error, node: node)), [])
                }
            }
            let files = staged
            let future = node.loop.flatSubmit {
                // sendFiles removes the copies itself when it refuses.
                do { return try node.sendFiles(to: p.to, staged: files, caption: p.caption) } catch {
                    return node.loop.makeFailedFuture(error)
                }
            }.map { records in
                JSONRPCResponse.success(id: id, result: FilesSendResult(transfers: records.map { node.fileInfo($0) }))
            }.flatMapErrorThrowing { error in
                JSONRPCResponse(id: id, error: ControlDispatcher.rpcError(error, node: node))
            }
            return (
                (try? future.wait()) ?? JSONRPCResponse(id: id, error: .internalError("the daemon is stopping")), []
            )
        case .success(.filesOpen(let p)):
            guard descriptors.isEmpty else {
                return (JSONRPCResponse(id: id, error: .invalidParams("files.open takes no descriptors")), [])
            }
            let future = node.loop.submit { () -> (JSONRPCResponse, [Int32]) in
                do {
                    let (record, fd, size) = try node.openReceivedFile(p.id)
                    return (
                        .success(id: id, result: FilesOpenResult(transfer: node.fileInfo(record), size: size)), [fd]
                    )
                } catch {
                    return (JSONRPCResponse(id: id, error: ControlDispatcher.rpcError(error, node: node)), [])
                }
            }
            return (try? future.wait()) ?? (
                JSONRPCResponse(id: id, error: .internalError("the daemon is stopping")), []
            )
        case .success:
            return (
                JSONRPCResponse(
                    id: id,
                    error: JSONRPCError(
                        .methodNotFound,
                        "\(request.method) is not served on the descriptor socket (only files.send and files.open); "
                            + "use the control socket")), []
            )
        }
    }

    /// Writes the answer line with `descriptors` attached to its first byte.
    private func answer(_ fd: Int32, _ response: JSONRPCResponse, descriptors: [Int32]) {
        guard var data = try? CanonicalJSON.encode(response) else { return }
        data.append(UInt8(ascii: "\n"))
        var offset = 0
        var attached = descriptors
        while offset < data.count {
            let n = DescriptorMessage.send(
                socket: fd, bytes: data[offset...], descriptors: attached, flags: Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return  // gone or too slow (SO_SNDTIMEO): nothing more to do
            }
            attached = []
            offset += n
        }
    }
}

/// Reads the one request line of a descriptor-socket connection: descriptors are accepted
/// only with the first bytes (a client attaches them to its first sendmsg); any that come
/// later, more than allowed, or a line longer than `maxRequestBytes`, refuse the request.
/// Every descriptor received is kept in `descriptors` for the caller to close.
struct DescriptorRequestReader {
    private(set) var descriptors: [Int32] = []
    private var buffer: [UInt8] = []

    mutating func read(_ fd: Int32) -> Result<[UInt8], JSONRPCError> {
        var first = true
        while true {
            guard
                let got = DescriptorMessage.receive(
                    socket: fd, maxBytes: 16_384, maxDescriptors: DescriptorRights.maxDescriptorsPerMessage, flags: 0)
            else {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return .failure(.idleTimeout()) }
                return .failure(.invalidRequest("cannot read the request: \(String(cString: strerror(errno)))"))
            }
            descriptors += got.descriptors
            if got.descriptorsLost {
                return .failure(
                    .invalidRequest(
                        "more than \(DescriptorRights.maxDescriptorsPerMessage) descriptors, or malformed control data")
                )
            }
            if !first && !got.descriptors.isEmpty {
                return .failure(.invalidRequest("descriptors must be attached to the first bytes of the request line"))
            }
            first = false
            if got.bytes.isEmpty {
                return .failure(.invalidRequest("the connection closed before a whole request line"))
            }
            if let newline = got.bytes.firstIndex(of: UInt8(ascii: "\n")) {
                buffer += got.bytes[..<newline]
                guard buffer.count <= DescriptorServer.maxRequestBytes else { return .failure(.lineTooLong()) }
                return .success(buffer)
            }
            buffer += got.bytes
            guard buffer.count <= DescriptorServer.maxRequestBytes else { return .failure(.lineTooLong()) }
        }
    }
}
