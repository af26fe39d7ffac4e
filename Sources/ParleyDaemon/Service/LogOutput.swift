import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where finished log lines go. Shared by every copy of a handler; the lock keeps lines
/// from different threads whole and in one order (a line can be longer than the pipe's
/// atomic write size, PIPE_BUF).
public final class LogOutput: Sendable {
    /// Receives each finished line, without the trailing newline.
    public typealias Sink = @Sendable (String) -> Void

    private let lock = NIOLock()
    private let sink: Sink

    public init(sink: @escaping Sink) {
        self.sink = sink
    }

    /// Standard error, the stream journald captures under systemd.
    public static let standardError = LogOutput(sink: writeToStandardError)

    func writeLine(_ line: String) {
        lock.withLock { sink(line) }
    }

    /// Writes the whole line plus newline to fd 2, retrying short writes and EINTR.
    /// Errors are dropped: there is nowhere left to report them.
    private static func writeToStandardError(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(UInt8(ascii: "\n"))
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += written
        }
    }
}
