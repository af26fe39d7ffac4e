import Foundation
import Logging
import ParleyControlProtocol

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One log line, pure: the level, the message and metadata as sorted key=value pairs,
/// untrusted text escaped so a peer-chosen name cannot forge or split lines, and every
/// part cut to a bound so a hostile value cannot bloat the journal.
enum LogLine {
    /// Longest message kept (in Unicode scalars); the rest is cut with "…".
    static let maxMessageLength = 4096
    /// Longest metadata value kept: enough for any fingerprint, path or address, short
    /// enough that a hostile peer name cannot bloat the journal.
    static let maxValueLength = 1024
    /// Longest metadata key kept; keys come from code, this only guards mistakes.
    static let maxKeyLength = 64

    /// The line without its newline. `time` is used by the human format only.
    static func format(
        level: Logging.Logger.Level, message: String, metadata: Logging.Logger.Metadata,
        format: LogFormat, time: Date
    ) -> String {
        var line: String
        switch format {
        case .journald:
            line = "<\(syslogPriority(level))>"
        case .human:
            let name = level.rawValue
            let padded = name.count < 5 ? name + String(repeating: " ", count: 5 - name.count) : name
            line = iso8601(time) + " " + padded + " "
        }
        line += TextEscaping.escaped(message, escapeQuotes: false, maxScalars: maxMessageLength)
        for key in metadata.keys.sorted() {
            line += " " + sanitizedKey(key) + "=" + renderedValue(metadata[key].map { "\($0)" } ?? "")
        }
        return line
    }

    /// syslog(3) priority, which journald reads from a "<N>" line prefix.
    static func syslogPriority(_ level: Logging.Logger.Level) -> Int {
        switch level {
        case .critical: 2  // LOG_CRIT
        case .error: 3  // LOG_ERR
        case .warning: 4  // LOG_WARNING
        case .notice: 5  // LOG_NOTICE
        case .info: 6  // LOG_INFO
        case .debug, .trace: 7  // LOG_DEBUG: syslog has nothing finer
        }
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
        let needsQuotes =
            value.isEmpty
            || value.unicodeScalars.contains { scalar in
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
}

private extension Int64 {
    /// Floor division, so times before 1970 still get a fraction in 0...999.
    func quotientRounding(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor < 0) ? quotient - 1 : quotient
    }
}
