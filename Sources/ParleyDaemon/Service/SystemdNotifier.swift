import Foundation
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// sd_notify(3) without libsystemd: one datagram of newline-separated "KEY=VALUE"
/// assignments to the AF_UNIX socket systemd names in $NOTIFY_SOCKET.
///
/// Used for Type=notify start-up ("READY=1", and "EXTEND_TIMEOUT_USEC" while a long
/// store upgrade runs before it), status text, shutdown ("STOPPING=1"),
/// watchdog pings ("WATCHDOG=1") and reloads (`reloading()`, then "READY=1" once the
/// new configuration is in effect). Failures never throw: a daemon must keep running
/// when systemd is gone, but the result says what went wrong so it can be logged.
///
/// Never blocks: the socket is non-blocking and sent with MSG_DONTWAIT. A notify socket
/// nobody reads (systemd stuck, or a hostile $NOTIFY_SOCKET under a hand-made service)
/// fills after a few datagrams (`net.unix.max_dgram_qlen`, 10 by default), and a blocking
/// send would then stop the event loop that sends the watchdog pings; the datagram is
/// dropped instead (`.socketFull`); the daemon sends READY=1 and the watchdog's pings again
/// shortly after, from the event loop (`sendRetryingWhileFull`, SystemdNotifier+Retry.swift).
public struct SystemdNotifier: Sendable {
    /// The socket as given: an absolute path, or "@name" for the abstract namespace.
    public let socketPath: String

    /// Datagram size cap: status text is short; 4 KiB keeps a runaway status string
    /// from being sent whole, far below the socket's datagram limit.
    public static let maxMessageBytes = 4096
    /// Room in sockaddr_un.sun_path (108 on Linux); abstract names use all of it.
    static let maxSocketPathBytes = 108

    /// nil when $NOTIFY_SOCKET is unset, empty, or not a form we can use (systemd
    /// only hands out absolute paths and "@" names; "vsock:" needs AF_VSOCK).
    public init?(environment: [String: String] = ProcessInfo.processInfo.environment) {
        guard let path = environment["NOTIFY_SOCKET"] else { return nil }
        self.init(socketPath: path)
    }

    public init?(socketPath path: String) {
        guard path.hasPrefix("/") || (path.hasPrefix("@") && path.utf8.count > 1) else { return nil }
        guard path.utf8.count <= Self.maxSocketPathBytes - (path.hasPrefix("/") ? 1 : 0),
            !path.utf8.contains(0)
        else { return nil }
        self.socketPath = path
    }

    /// Sends the assignments as one datagram. Each must be "KEY=VALUE" on one line.
    @discardableResult
    public func notify(_ state: [String]) -> Result<Void, SystemdNotifyError> {
        for assignment in state {
            guard assignment.contains("="), !assignment.contains("\n"), !assignment.utf8.contains(0) else {
                return .failure(.invalidAssignment(TextEscaping.quoted(assignment)))
            }
        }
        let message = Array(state.joined(separator: "\n").utf8)
        guard !message.isEmpty else { return .failure(.invalidAssignment("(empty)")) }
        guard message.count <= Self.maxMessageBytes else {
            return .failure(.messageTooLarge(limit: Self.maxMessageBytes))
        }
        return send(message)
    }

    /// "READY=1" plus an optional status line.
    @discardableResult
    public func ready(status: String? = nil) -> Result<Void, SystemdNotifyError> {
        notify(["READY=1"] + (status.map { [Self.statusAssignment($0)] } ?? []))
    }

    /// "STATUS=…" (shown by systemctl status); newlines become spaces.
    @discardableResult
    public func status(_ text: String) -> Result<Void, SystemdNotifyError> {
        notify([Self.statusAssignment(text)])
    }

    /// "EXTEND_TIMEOUT_USEC=…" plus an optional status line: while starting (before
    /// READY=1), systemd's start timeout (and a running watchdog's) ends no sooner than
    /// `microseconds` from now. Must be sent again before that runs out to keep going
    /// (StartTimeoutExtension decides when). systemd < 236 ignores it.
    @discardableResult
    public func extendTimeout(microseconds: UInt64, status: String? = nil) -> Result<Void, SystemdNotifyError> {
        notify(["EXTEND_TIMEOUT_USEC=\(microseconds)"] + (status.map { [Self.statusAssignment($0)] } ?? []))
    }

    @discardableResult
    public func stopping() -> Result<Void, SystemdNotifyError> { notify(["STOPPING=1"]) }

    @discardableResult
    public func watchdog() -> Result<Void, SystemdNotifyError> { notify(["WATCHDOG=1"]) }

    /// Start of a reload. systemd ≥ 253 wants "MONOTONIC_USEC" with it to match the
    /// reload to its request; older versions ignore the extra field. Send `ready()`
    /// when the reload is done.
    @discardableResult
    public func reloading(monotonicMicroseconds: UInt64 = SystemdNotifier.monotonicMicroseconds())
        -> Result<Void, SystemdNotifyError>
    {
        notify(["RELOADING=1", "MONOTONIC_USEC=\(monotonicMicroseconds)"])
    }

    /// CLOCK_MONOTONIC in microseconds, the clock systemd uses for MONOTONIC_USEC.
    public static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1_000
    }

    private static func statusAssignment(_ text: String) -> String {
        "STATUS=" + String(text.map { $0 == "\n" || $0 == "\r\n" || $0 == "\r" ? " " : $0 }).filter { $0 != "\0" }
    }

    private func send(_ message: [UInt8]) -> Result<Void, SystemdNotifyError> {
        #if os(Linux)
            let fd = socket(
                AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        #else
            let fd = socket(AF_UNIX, SOCK_DGRAM, 0)
        #endif
        guard fd >= 0 else { return .failure(.socketFailed(errno: errno)) }
        defer { close(fd) }

        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        // Abstract names start with a NUL byte instead of '@' and are not NUL-terminated:
        // the address length says where they end.
        if abstract { pathBytes[0] = 0 }
        // sun_path is a stored field of sockaddr_un, so its offset always exists.
        let addressLength =
            MemoryLayout<sockaddr_un>.offset(of: \sockaddr_un.sun_path)! + pathBytes.count
            + (abstract ? 0 : 1)
        withUnsafeMutableBytes(of: &address.sun_path) { sunPath in
            sunPath.copyBytes(from: pathBytes)  // init ensured it fits
        }

        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                message.withUnsafeBytes { body in
                    sendto(
                        fd, body.baseAddress, body.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT), socketAddress,
                        socklen_t(addressLength))
                }
            }
        }
        if sent < 0 {
            let code = errno
            return .failure(code == EAGAIN || code == EWOULDBLOCK ? .socketFull : .sendFailed(errno: code))
        }
        if sent != message.count { return .failure(.shortSend(sent: sent, expected: message.count)) }
        return .success(())
    }
}

/// Why a notification did not reach systemd.
public enum SystemdNotifyError: Error, Equatable, Sendable, CustomStringConvertible {
    case invalidAssignment(String)
    case messageTooLarge(limit: Int)
    case socketFailed(errno: Int32)
    case sendFailed(errno: Int32)
    case shortSend(sent: Int, expected: Int)
    /// The notify socket's queue is full (nothing reads it): this notification was dropped
    /// rather than wait.
    case socketFull

    public var description: String {
        switch self {
        case .invalidAssignment(let text):
            "invalid sd_notify assignment \(text) (expected one KEY=VALUE line)"
        case .messageTooLarge(let limit):
            "sd_notify message longer than \(limit) bytes"
        case .socketFailed(let code):
            "cannot create notify socket: \(String(cString: strerror(code)))"
        case .sendFailed(let code):
            "cannot send to $NOTIFY_SOCKET: \(String(cString: strerror(code)))"
        case .shortSend(let sent, let expected):
            "sd_notify datagram truncated (\(sent) of \(expected) bytes sent)"
        case .socketFull:
            "$NOTIFY_SOCKET is full (systemd is not reading it); this notification was dropped, "
                + "READY=1 and watchdog pings are sent again for a few seconds (check the service manager: "
                + "systemctl status)"
        }
    }
}
