import Foundation
import NIOCore
import NIOPosix
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// The Unix-socket control server. Who may connect: the daemon's own user, root,
/// and processes that hold the daemon's group (checked with SO_PEERCRED and the caller's
/// real groups on every connection, `ControlAccess`, on top of the socket file's 0660 mode)
/// when the socket's directory lets the group through; a person's own instance
/// (parleyd@.service, directory 0700) is for that person alone. Next to it, the descriptor
/// socket (`DescriptorServer`) for the calls that pass files, with the same rule.
final class ControlServer: @unchecked Sendable {
    private let node: Node
    private let info: DaemonRuntimeInfo
    let path: String
    private var channel: Channel?
    private var descriptors: DescriptorServer?
    /// Whether members of the daemon's group may connect: decided at start from the socket
    /// directory's mode (its group may search it, others may not), so the check repeats
    /// what the file system says.
    private var groupMayConnect = true
    private var clients: [ObjectIdentifier: ControlConnection] = [:]
    /// Numbers and keeps every notification, for subscribers that resume.
    let journal: EventJournal

    init(node: Node, info: DaemonRuntimeInfo, path: String) {
        self.node = node
        self.info = info
        self.path = path
        self.journal = EventJournal(node: node)
    }

    enum ServerError: Error, CustomStringConvertible {
        case socketDirectory(String, String)
        case alreadyRunning(String)
        var description: String {
            switch self {
            case let .socketDirectory(p, why): return "cannot prepare the control socket directory \(p): \(why)"
            case .alreadyRunning(let p):
                return "another parleyd is already answering on \(p); stop it first or pass --socket"
            }
        }
    }

    /// Binds the socket. Must be called off the event loop (it waits for the bind).
    /// How much a client may leave unread before the daemon stops reading its requests
    /// (and, for a subscriber, before the backlog limits are applied). NIO's default
    /// (64 KiB) would stall an ordinary client that writes a batch of large sends before
    /// reading the answers (each answer repeats its body, up to 64 KiB); 4 MiB lets such a
    /// batch through while one connection still cannot make the daemon hold more.
    static let unreadAnswersWaterMark = ChannelOptions.Types.WriteBufferWaterMark(low: 1 << 20, high: 4 << 20)

    func start() throws {
        let dir = (path as NSString).deletingLastPathComponent
        try Self.prepareDirectory(dir)
        if Self.somebodyAnswers(at: path) { throw ServerError.alreadyRunning(path) }
        let (node, journal) = (self.node, self.journal)
        try node.loop.submit {
            journal.start()
            node.addObserver(journal)
        }.wait()
        let bootstrap = ServerBootstrap(group: node.loop)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.writeBufferWaterMark, value: Self.unreadAnswersWaterMark)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try self.admit(channel)
                }
            }
        // Created 0660: umask 0117 while binding, so the file is never briefly wider.
        let old = umask(0o117)
        defer { umask(old) }
        groupMayConnect = Self.directoryLetsGroupIn(dir)
        let rule = ControlAccess.Rule(daemonUID: getuid(), daemonGID: getgid(), groupMayConnect: groupMayConnect)
        channel = try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
        chmod(path, 0o660)
        let descriptors = DescriptorServer(
            path: ControlSocketPath.descriptorSocket(forControl: path), node: node,
            allows: { cred, fd in Self.allows(cred, rule: rule) { PeerGroups.of(socket: fd) } })
        try descriptors.start()
        self.descriptors = descriptors
    }

    /// Whether the directory is kept for the daemon's group (`ControlSocketDirectory`).
    static func directoryLetsGroupIn(_ dir: String) -> Bool {
        var st = stat()
        guard stat(dir, &st) == 0 else { return false }
        return ControlSocketDirectory.groupMayConnect(mode: st.st_mode)
    }

    private func admit(_ channel: Channel) throws {
        let ok = Self.peerAllowed(
            channel,
            rule: ControlAccess.Rule(daemonUID: getuid(), daemonGID: getgid(), groupMayConnect: groupMayConnect))
        if !ok || clients.count >= ControlLimits.maxClients {
            let err: JSONRPCError =
                ok
                ? .tooManyClients()
                : JSONRPCError(
                    .notPermitted,
                    groupMayConnect
                        ? ControlAccess.refusal(groupName: Self.daemonGroupName(), daemonGID: getgid())
                        : ControlAccess.ownerOnlyRefusal(ownerName: Self.daemonUserName()))
            if let data = try? JSONEncoder().encode(JSONRPCResponse(id: nil, error: err)) {
                var buf = channel.allocator.buffer(capacity: data.count + 1)
                buf.writeBytes(data)
                buf.writeInteger(UInt8(ascii: "\n"))
                channel.writeAndFlush(buf).whenComplete { _ in channel.close(promise: nil) }
            } else {
                channel.close(promise: nil)
            }
            if !ok { node.log.warning("control connection refused: peer credentials not allowed", [:]) }
            return
        }
        let conn = ControlConnection(node: node, info: info, journal: journal) { [weak self] c in
            self?.clients[ObjectIdentifier(c)] = nil
        }
        clients[ObjectIdentifier(conn)] = conn
        try channel.pipeline.syncOperations.addHandler(conn)
    }

    /// SO_PEERCRED: the connecting process's uid, gid and pid, from the kernel; its
    /// supplementary groups from /proc (`ControlAccess`).
    private static func peerAllowed(_ channel: Channel, rule: ControlAccess.Rule) -> Bool {
        guard let provider = channel as? SocketOptionProvider else { return false }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        // On the channel's own loop the option is read synchronously, so the box is
        // filled before this function returns.
        let box = CredentialBox()
        future.whenSuccess { box.value = $0 }
        guard let cred = box.value else { return false }
        return allows(cred, rule: rule) {
            let groups: EventLoopFuture<PeerGroups.Buffer> = provider.unsafeGetSocketOption(
                level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(PeerGroups.option))
            let got = GroupsBox()
            groups.whenSuccess { got.value = $0.groups }
            return got.value
        }
    }

    /// The access rule for credentials the kernel gave (control and descriptor sockets).
    /// `socketGroups`: the caller's supplementary groups as the socket reports them
    /// (SO_PEERGROUPS), nil if it cannot; then /proc/PID/status is asked.
    static func allows(_ cred: PeerCredentials, rule: ControlAccess.Rule, socketGroups: () -> [UInt32]?) -> Bool {
        var caller = ControlAccess.Caller(uid: cred.uid, gid: cred.gid, groups: nil)
        if !ControlAccess.allows(caller, rule: rule), rule.groupMayConnect {
            // Slots the kernel did not fill read as 0, so gid 0 cannot be told from "none".
            if rule.daemonGID != 0 { caller.groups = socketGroups() }
            if caller.groups == nil && cred.pid > 0 { caller.groups = supplementaryGroups(pid: cred.pid) }
        }
        return ControlAccess.allows(caller, rule: rule)
    }

    /// The groups process `pid` holds now ("Groups:" of /proc/PID/status); nil if gone.
    private static func supplementaryGroups(pid: Int32) -> [UInt32]? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        return ControlAccess.supplementaryGroups(procStatus: text)
    }

    /// The name of the daemon's user, for the refusal message.
    private static func daemonUserName() -> String? {
        guard let pw = getpwuid(getuid()) else { return nil }
        return String(cString: pw.pointee.pw_name)
    }

    /// The name of the daemon's group, for the refusal message.
    private static func daemonGroupName() -> String? {
        guard let grp = getgrgid(getgid()) else { return nil }
        return String(cString: grp.pointee.gr_name)
    }

    /// Creates the socket's directory 0700 if missing and refuses one others could write to
    /// (`ControlSocketDirectory`).
    static func prepareDirectory(_ dir: String) throws {
        var st = stat()
        if stat(dir, &st) != 0 {
            if mkdir(dir, 0o700) != 0 && errno != EEXIST {
                let parent = (dir as NSString).deletingLastPathComponent
                if mkdir(parent, 0o700) != 0 && errno != EEXIST || mkdir(dir, 0o700) != 0 && errno != EEXIST {
                    throw ServerError.socketDirectory(dir, String(cString: strerror(errno)))
                }
            }
            guard stat(dir, &st) == 0 else { throw ServerError.socketDirectory(dir, String(cString: strerror(errno))) }
        }
        if let problem = ControlSocketDirectory.problem(mode: st.st_mode, owner: st.st_uid, daemonUID: geteuid()) {
            throw ServerError.socketDirectory(dir, problem)
        }
    }

    /// True when a live daemon answers on `path` (so we must not steal its socket).
    private static func somebodyAnswers(at path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else { return false }
        withUnsafeMutableBytes(of: &addr.sun_path) { p in
            for (i, b) in bytes.enumerated() { p[i] = b }
        }
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return rc == 0
    }

    /// Closes the listener and every client.
    func stop() -> EventLoopFuture<Void> {
        let loop = node.loop
        descriptors?.stop()
        return loop.flatSubmit { [self] in
            for c in clients.values { c.close() }
            let f = channel?.close() ?? loop.makeSucceededVoidFuture()
            return f.recover { _ in }.map {
                unlink(self.path)
                return ()
            }
        }
    }
}

private final class CredentialBox: @unchecked Sendable { var value: PeerCredentials? }
private final class GroupsBox: @unchecked Sendable { var value: [UInt32]? }

/// Same layout as `struct ucred` (pid_t, uid_t, gid_t), Sendable for NIO.
struct PeerCredentials: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
