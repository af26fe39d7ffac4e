import ParleyControlProtocol
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How log lines look.
public enum LogFormat: Sendable {
    /// For stderr captured by journald: "<6>message key=value". journald reads the
    /// "<N>" syslog priority prefix and adds its own timestamp.
    case journald
    /// For a terminal or a file: "2026-11-22T18:00:00.123Z info  message key=value".
    case human
}

/// A small structured logger: one line per event, metadata as sorted key=value pairs,
/// untrusted text escaped so a peer-chosen name cannot forge or split lines.
///
/// A value type that is cheap to copy; copies share the output and the level, so
/// `setLevel` after a config reload reaches every component holding a copy. Safe to
/// use from any thread: a lock serialises level changes and writes.
public struct Logger: Sendable {
    /// Receives each finished line, without the trailing newline.
    public typealias Sink = @Sendable (String) -> Void

    public let format: LogFormat
    private let core: LoggerCore
    private let clock: @Sendable () -> Date

    /// Longest message kept (in Unicode scalars); the rest is cut with "…".
    public static let maxMessageLength = 4096
    /// Longest metadata value kept: enough for any fingerprint, path or address, short
    /// enough that a hostile peer name cannot bloat the journal.
    public static let maxValueLength = 1024
    /// Longest metadata key kept; keys come from code, this only guards mistakes.
    public static let maxKeyLength = 64

    /// `sink` defaults to standard error; `clock` supplies human-format timestamps.
    public init(level: LogLevel, format: LogFormat, sink: Sink? = nil,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.format = format
        self.core = LoggerCore(level: level, sink: sink ?? Logger.writeToStandardError)
        self.clock = clock
    }

    /// journald format when our stderr is the journal stream systemd told us about in
    /// $JOURNAL_STREAM ("device:inode"), human format otherwise.
    public static func fromEnvironment(level: LogLevel,
                                       environment: [String: String] = ProcessInfo.processInfo.environment,
                                       sink: Sink? = nil) -> Logger {
        Logger(level: level,
               format: format(journalStream: environment["JOURNAL_STREAM"], standardError: standardErrorIdentity()),
               sink: sink)
    }

    /// The format for a $JOURNAL_STREAM value, given stderr's (device, inode).
    /// The variable is inherited by children whose stderr may point elsewhere, so
    /// systemd.exec(5) advises comparing it with stderr itself; when stderr cannot be
    /// inspected, its presence alone decides.
    public static func format(journalStream: String?, standardError: (device: UInt64, inode: UInt64)?) -> LogFormat {
        guard let journalStream, !journalStream.isEmpty else { return .human }
        guard let standardError else { return .journald }
        let parts = journalStream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return .human }
        return device == standardError.device && inode == standardError.inode ? .journald : .human
    }

    public var level: LogLevel { core.withLock { $0.level } }

    /// Changes the level for this logger and every copy of it.
    public func setLevel(_ level: LogLevel) { core.withLock { $0.level = level } }

    public func isEnabled(_ level: LogLevel) -> Bool { level <= self.level }

    public func error(_ message: String, _ metadata: [String: String] = [:]) { log(.error, message, metadata) }
    public func warning(_ message: String, _ metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    public func info(_ message: String, _ metadata: [String: String] = [:]) { log(.info, message, metadata) }
    public func debug(_ message: String, _ metadata: [String: String] = [:]) { log(.debug, message, metadata) }

    public func log(_ level: LogLevel, _ message: String, _ metadata: [String: String] = [:]) {
        core.withLock { state in
            guard level <= state.level else { return }
            let line = Logger.formatLine(level: level, message: message, metadata: metadata,
                                         format: format, time: format == .human ? clock() : nil)
            state.sink(line)
        }
    }

    /// One log line, without newline. Pure; exposed to the module for tests.
    static func formatLine(level: LogLevel, message: String, metadata: [String: String],
                           format: LogFormat, time: Date?) -> String {
        var line: String
        switch format {
        case .journald:
            line = "<\(level.syslogPriority)>"
        case .human:
            let padded = level.rawValue.count < 5
                ? level.rawValue + String(repeating: " ", count: 5 - level.rawValue.count)
                : level.rawValue
            line = iso8601(time ?? Date()) + " " + padded + " "
        }
        line += TextEscaping.escaped(message, escapeQuotes: false, maxScalars: maxMessageLength)
        for key in metadata.keys.sorted() {
            line += " " + sanitizedKey(key) + "=" + renderedValue(metadata[key] ?? "")
        }
        return line
    }

    /// Keys are identifiers: anything else becomes '_' so "k=v" stays parseable.
    private static func sanitizedKey(_ key: String) -> String {
        let kept = key.unicodeScalars.prefix(maxKeyLength).map { scalar -> Character in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "-", ".": Character(scalar)
            default: "_"
            }
        }
        return kept.isEmpty ? "_" : String(kept)
    }

    /// Bare when unambiguous (fp=3a9c…), otherwise quoted with escapes (name="Bob \"B\"").
    private static func renderedValue(_ value: String) -> String {
        let needsQuotes = value.isEmpty || value.unicodeScalars.contains { scalar in
            scalar == " " || scalar == "\"" || scalar == "=" || scalar == "\\"
                || scalar.properties.isWhitespace || TextEscaping.isInvisibleControl(scalar)
        }
        let escaped = TextEscaping.escaped(value, escapeQuotes: needsQuotes, maxScalars: maxValueLength)
        return needsQuotes ? "\"" + escaped + "\"" : escaped
    }

    /// "2026-11-22T18:00:00.123Z" in UTC, without the cost and locking of a DateFormatter.
    static func iso8601(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds.quotientRounding(by: 1000))
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))"
            + "T\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))"
            + ".\(pad(Int32(fraction), 3))Z"
    }

    /// (st_dev, st_ino) of file descriptor 2, or nil if it cannot be inspected.
    static func standardErrorIdentity() -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard fstat(STDERR_FILENO, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// Writes the whole line plus newline to fd 2, retrying short writes and EINTR.
    /// Errors are dropped: there is nowhere left to report them.
    @Sendable static func writeToStandardError(_ line: String) {
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

private extension Int64 {
    /// Floor division, so times before 1970 still get a fraction in 0...999.
    func quotientRounding(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}

/// The shared, mutable part of a Logger.
/// @unchecked Sendable: `state` is only touched inside `withLock`.
private final class LoggerCore: @unchecked Sendable {
    struct State {
        var level: LogLevel
        let sink: Logger.Sink
    }

    private let lock = NSLock()
    private var state: State

    init(level: LogLevel, sink: @escaping Logger.Sink) {
        self.state = State(level: level, sink: sink)
    }

    func withLock<Result>(_ body: (inout State) -> Result) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return body(&state)
    }
}
