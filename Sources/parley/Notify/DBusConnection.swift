import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A client connection to the person's session bus (`DBUS_SESSION_BUS_ADDRESS`): a Unix
/// socket, SASL `EXTERNAL` (the kernel vouches for our uid), `Hello`, then method calls
/// answered in order. Talking D-Bus directly rather than running `notify-send` or `gdbus`
/// per notification keeps message text off every command line (`/proc/PID/cmdline` is
/// readable by every local user) and needs nothing installed beside `parley`.
final class DBusConnection {
    /// A reply slower than this means the notification server is stuck: give up on it.
    static let replyTimeoutSeconds = 5
    /// Messages skipped (signals, other replies) while waiting for one reply.
    static let maxSkippedMessages = 64

    private let fd: Int32
    private var serial: UInt32 = 0

    enum Failure: Error, CustomStringConvertible {
        case noSessionBus
        case unsupportedAddress(String)
        case io(String, Int32)
        case authentication(String)
        case wire(DBusWireError)
        case remote(name: String, message: String)

        var description: String {
            switch self {
            case .noSessionBus:
                return
                    "no desktop session bus (DBUS_SESSION_BUS_ADDRESS is not set): run parley notify inside your desktop session, e.g. systemctl --user enable --now parley-notify"
            case .unsupportedAddress(let address):
                return "cannot use the session bus address \(address): only unix:path= and unix:abstract= are supported"
            case .io(let what, let code): return "session bus: \(what): \(String(cString: strerror(code)))"
            case .authentication(let line): return "session bus refused us: \(line)"
            case .wire(let error): return "session bus: \(error)"
            case .remote(let name, let message): return "\(name): \(message)"
            }
        }
    }

    /// The first `unix:path=` or `unix:abstract=` entry of a bus address
    /// (`;`-separated entries of `,`-separated `key=value`, values %-escaped).
    static func socketAddress(_ address: String) -> (path: String, abstract: Bool)? {
        for entry in address.split(separator: ";") {
            guard entry.hasPrefix("unix:") else { continue }
            for pair in entry.dropFirst(5).split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, let value = String(parts[1]).removingPercentEncoding else { continue }
                if parts[0] == "path" { return (value, false) }
                if parts[0] == "abstract" { return (value, true) }
            }
        }
        return nil
    }

    init(address: String?) throws(Failure) {
        guard let address, !address.isEmpty else { throw .noSessionBus }
        guard let (path, abstract) = Self.socketAddress(address) else { throw .unsupportedAddress(address) }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .io("socket", errno) }
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = (abstract ? [0] : []) + Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: addr.sun_path) else {
            close(fd)
            throw .unsupportedAddress(address)
        }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in for (i, b) in bytes.enumerated() { raw[i] = b } }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw .io("connect to \(path)", code)
        }
        var timeout = timeval(tv_sec: Self.replyTimeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        // From here the object owns the descriptor: a failure below releases it, and
        // `deinit` closes it.
        self.fd = fd
        try authenticate()
        _ = try call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
            interface: "org.freedesktop.DBus", member: "Hello")
    }

    deinit { close(fd) }

    private func authenticate() throws(Failure) {
        let uid = String(getuid()).utf8.map { String($0, radix: 16) }.joined()  // ASCII digits: 2 hex each
        try send([0] + Array("AUTH EXTERNAL \(uid)\r\n".utf8))
        var line: [UInt8] = []
        while line.suffix(2) != [0x0D, 0x0A] {
            guard line.count < 512 else { throw .authentication("reply too long") }
            line += try receive(1)
        }
        let text = String(decoding: line, as: UTF8.self)
        guard text.hasPrefix("OK ") else { throw .authentication(text.trimmingCharacters(in: .whitespacesAndNewlines)) }
        try send(Array("BEGIN\r\n".utf8))
    }

    /// Calls a method and waits for its reply (skipping anything else the bus sends).
    func call(
        destination: String, path: String, interface: String, member: String, signature: String = "",
        body: [UInt8] = []
    ) throws(Failure) -> DBusMessage.Received {
        serial &+= 1
        if serial == 0 { serial = 1 }
        try send(
            DBusMessage.methodCall(
                serial: serial, destination: destination, path: path, interface: interface, member: member,
                signature: signature, body: body))
        for _ in 0..<Self.maxSkippedMessages {
            let first = try receive(16)
            let total: Int
            do { total = try DBusMessage.totalLength(ofHeader: first) } catch { throw .wire(error) }
            let message: DBusMessage.Received
            do { message = try DBusMessage.parse(first + (try receive(total - 16))) } catch let error as DBusWireError {
                throw .wire(error)
            } catch let error as Failure { throw error } catch { throw .wire(.malformed("\(error)")) }
            guard message.replySerial == serial else { continue }
            if message.type == DBusMessageType.error.rawValue {
                throw .remote(name: message.errorName ?? "error", message: message.firstString ?? "")
            }
            return message
        }
        throw .wire(.malformed("no reply among \(Self.maxSkippedMessages) messages"))
    }

    private func send(_ bytes: [UInt8]) throws(Failure) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .io("write", errno) }
            sent += n
        }
    }

    private func receive(_ count: Int) throws(Failure) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out[got...].withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                throw .io(n == 0 ? "the bus closed the connection" : "read", n == 0 ? ECONNRESET : errno)
            }
            got += n
        }
        return out
    }
}
